// The trial protocol and log parsers: every report kind, Megatron's lines, a user regex, OOM
// messages, and malformed lines that are counted but never fatal.
#include "paratune/trial/protocol.h"

#include <gtest/gtest.h>

#include "paratune/spec/error.h"

namespace paratune::trial {
namespace {

using Kind = LineReport::Kind;

TEST(Protocol, ParsesEveryReportKind) {
  OutputParser p;
  EXPECT_EQ(p.feed("starting").kind, Kind::kNothing);
  LineReport r = p.feed(R"(@paratune {"step": 7, "step_time_s": 0.512})");
  ASSERT_EQ(r.kind, Kind::kStep);
  EXPECT_EQ(r.step.step, 7);
  EXPECT_DOUBLE_EQ(r.step.step_time_s, 0.512);
  EXPECT_EQ(p.feed(R"(@paratune {"peak_memory_bytes": 1000})").kind, Kind::kPeakMemory);
  p.feed(R"(@paratune {"peak_memory_bytes": 3000})");
  p.feed(R"(@paratune {"peak_memory_bytes": 2000})");
  r = p.feed(R"(@paratune {"metric": "loss", "value": 2.31, "step": 7})");
  ASSERT_EQ(r.kind, Kind::kMetric);
  EXPECT_EQ(r.metric.name, "loss");
  EXPECT_EQ(r.metric.step, 7);
  p.feed(R"(@paratune {"metric": "lr", "value": 0.001})");
  EXPECT_EQ(p.feed("@paratune {\"oom\": true}\r").kind, Kind::kOom);
  const TrialOutput& out = p.output();
  ASSERT_EQ(out.steps.size(), 1u);
  EXPECT_EQ(out.peak_memory_bytes, 3000);  // the maximum counts
  ASSERT_EQ(out.metrics.size(), 2u);
  EXPECT_FALSE(out.metrics[1].step.has_value());
  EXPECT_TRUE(out.oom);
  EXPECT_EQ(out.lines, 8);
  EXPECT_EQ(out.malformed_lines, 0);
}

// What a wrapping backend (the Slurm watcher) says: queued, started where, and ended how -- with
// the trial's backend token only.
TEST(Protocol, WrappingBackendLines) {
  OutputParser p(ParserOptions{"", "s3cret"});
  EXPECT_EQ(p.feed(R"j(@paratune {"queued": "slurm job 4 (PENDING: Resources)", "token": "s3cret"})j").kind, Kind::kQueued);
  EXPECT_TRUE(p.output().queued);
  const LineReport started = p.feed(R"(@paratune {"started": "slurm job 4 on node7", "token": "s3cret"})");
  ASSERT_EQ(started.kind, Kind::kStarted);
  EXPECT_FALSE(p.output().queued);
  EXPECT_EQ(p.output().location, "slurm job 4 on node7");
  EXPECT_FALSE(p.output().ended);
  EXPECT_EQ(p.feed(R"(@paratune {"ended": "timeout", "reason": "Slurm: TIMEOUT", "token": "s3cret"})").kind, Kind::kEnded);
  p.feed(R"(@paratune {"ended": "oom", "token": "s3cret"})");  // the first end counts
  ASSERT_TRUE(p.output().ended);
  EXPECT_EQ(p.output().ended->status, "timeout");
  EXPECT_EQ(p.output().ended->reason, "Slurm: TIMEOUT");
  for (const char* bad : {R"(@paratune {"ended": "completed", "token": "s3cret"})",
                          R"(@paratune {"ended": "oom", "why": "x", "token": "s3cret"})",
                          R"(@paratune {"started": "", "token": "s3cret"})", R"(@paratune {"queued": 3, "token": "s3cret"})",
                          R"(@paratune {"ended": "failed", "reason": 1, "token": "s3cret"})",
                          // The program itself cannot say them: it does not know the token.
                          R"(@paratune {"queued": "me"})", R"(@paratune {"queued": "me", "token": "guess"})",
                          R"(@paratune {"started": "node1", "token": ""})"})
    EXPECT_EQ(p.feed(bad).kind, Kind::kMalformed) << bad;
  EXPECT_EQ(p.feed(R"(@paratune {"token": "s3cret", "started": ")" + std::string(201, 'x') + "\"}").kind, Kind::kMalformed);
  // Without a backend token (the local backend) none counts.
  OutputParser local;
  EXPECT_EQ(local.feed(R"(@paratune {"queued": "x", "token": ""})").kind, Kind::kMalformed);
  EXPECT_EQ(local.feed(R"(@paratune {"ended": "oom"})").kind, Kind::kMalformed);
  EXPECT_EQ(local.feed(R"(@paratune {"metric": "lo\u0000ss", "value": 1})").kind, Kind::kMalformed);  // NUL in a name
  EXPECT_FALSE(local.output().queued);
  EXPECT_FALSE(local.output().ended);
  // Slurm's own out-of-memory messages.
  EXPECT_EQ(p.feed("slurmstepd: error: Exceeded job memory limit").kind, Kind::kOom);
  EXPECT_EQ(p.feed("slurmstepd: error: Detected 1 oom_kill event in StepId=5.batch.").kind, Kind::kOom);
}

TEST(Protocol, MalformedLinesAreCountedAndIgnored) {
  OutputParser p;
  const char* bad[] = {
      "@paratune {\"step\": 1, \"step_time_s\": 0.5",          // truncated JSON
      "@paratune [1, 2]",                                      // not an object
      "@paratune {\"step\": -1, \"step_time_s\": 0.5}",        // negative step
      "@paratune {\"step\": 1.5, \"step_time_s\": 0.5}",       // fractional step
      "@paratune {\"step\": 1, \"step_time_s\": 0}",           // zero time
      "@paratune {\"step\": 1, \"step_time_s\": \"fast\"}",    // wrong type
      "@paratune {\"step\": 1, \"step_time_s\": 0.5, \"x\": 1}",  // unknown key
      "@paratune {\"peak_memory_bytes\": -5}",
      "@paratune {\"metric\": \"\", \"value\": 1}",
      "@paratune {\"metric\": \"loss\"}",
      "@paratune {\"oom\": false}",
      "@paratune {}",
      "@paratune \x01\x02\xff garbage",
  };
  for (const char* line : bad) EXPECT_EQ(p.feed(line).kind, Kind::kMalformed) << line;
  p.feed(R"(@paratune {"step": 1, "step_time_s": 0.25})");
  EXPECT_EQ(p.output().malformed_lines, static_cast<std::int64_t>(std::size(bad)));
  EXPECT_EQ(p.output().first_malformed, "not valid JSON");
  ASSERT_EQ(p.output().steps.size(), 1u);
  EXPECT_FALSE(p.output().oom);
  EXPECT_FALSE(p.output().peak_memory_bytes.has_value());
}

// A fused group's lines name their member (hpo/fusion.h splits the output by it).
TEST(Protocol, FusedMembersMetricsAndDivergence) {
  OutputParser p;
  LineReport r = p.feed(R"(@paratune {"member": 2, "metric": "train_loss", "value": 1.5, "step": 3})");
  ASSERT_EQ(r.kind, Kind::kMetric);
  EXPECT_EQ(r.metric.member, 2);
  EXPECT_EQ(p.feed(R"(@paratune {"metric": "train_loss", "value": 1.5})").metric.member, std::nullopt);
  r = p.feed(R"(@paratune {"member": 1, "diverged": "the train loss is nan at step 4"})");
  ASSERT_EQ(r.kind, Kind::kDiverged);
  EXPECT_EQ(r.diverged.member, 1);
  EXPECT_EQ(r.diverged.reason, "the train loss is nan at step 4");
  for (const char* bad : {R"(@paratune {"member": -1, "metric": "x", "value": 1})",
                          R"(@paratune {"member": 1.5, "metric": "x", "value": 1})",
                          R"(@paratune {"member": "a", "diverged": "why"})", R"(@paratune {"diverged": "no member"})",
                          R"(@paratune {"member": 0, "diverged": 3})", R"(@paratune {"member": 0, "diverged": "x", "y": 1})"})
    EXPECT_EQ(p.feed(bad).kind, Kind::kMalformed) << bad;
  ASSERT_EQ(p.output().diverged.size(), 1u);
  EXPECT_EQ(p.output().metrics.size(), 2u);
  EXPECT_EQ(p.output().malformed_lines, 6);
}

// A serving program's lines (docs/trial-protocol.md, "Serving"): it serves, an assignment is done
// (or failed), a paused trial kept in memory; malformed ones are counted and ignored.
TEST(Protocol, ServingLines) {
  OutputParser p;
  LineReport r = p.feed(R"(@paratune {"serve": 1})");
  ASSERT_EQ(r.kind, Kind::kServe);
  EXPECT_EQ(r.serve_version, 1);
  r = p.feed(R"(@paratune {"done": "lr-0007"})");
  ASSERT_EQ(r.kind, Kind::kDone);
  EXPECT_EQ(r.done_trial, "lr-0007");
  EXPECT_EQ(r.done_failure, "");
  r = p.feed(R"(@paratune {"done": "lr-0008", "failed": "ranks: value 2: one-rank trials only"})");
  ASSERT_EQ(r.kind, Kind::kDone);
  EXPECT_EQ(r.done_failure, "ranks: value 2: one-rank trials only");
  r = p.feed(R"(@paratune {"checkpoint_step": 26, "in_memory": true})");
  ASSERT_EQ(r.kind, Kind::kCheckpoint);
  EXPECT_TRUE(r.checkpoint_in_memory);
  EXPECT_EQ(p.output().checkpoint_step, 26);
  EXPECT_TRUE(p.output().checkpoint_in_memory);
  p.feed(R"(@paratune {"checkpoint_step": 80})");  // saved to disk: the last line counts
  EXPECT_EQ(p.output().checkpoint_step, 80);
  EXPECT_FALSE(p.output().checkpoint_in_memory);
  const char* bad[] = {R"(@paratune {"serve": 2})",           R"(@paratune {"serve": true})",
                       R"(@paratune {"serve": 1, "x": 1})",   R"(@paratune {"done": 7})",
                       R"(@paratune {"done": ""})",           R"(@paratune {"done": "a", "failed": ""})",
                       R"(@paratune {"done": "a", "failed": 3})", R"(@paratune {"done": "a", "why": "x"})",
                       R"(@paratune {"checkpoint_step": 3, "in_memory": "yes"})"};
  for (const char* line : bad) EXPECT_EQ(p.feed(line).kind, Kind::kMalformed) << line;
  EXPECT_EQ(p.output().malformed_lines, static_cast<std::int64_t>(std::size(bad)));
  EXPECT_EQ(p.output().checkpoint_step, 80);
}

TEST(Protocol, ReadsMegatronLogLines) {
  OutputParser p;
  LineReport r = p.feed(
      " [2024-05-01 10:00:00] iteration       10/     100 | consumed samples:        10240 | elapsed time per "
      "iteration (ms): 1234.5 | learning rate: 1.0E-04 | global batch size:  1024 | lm loss: 7.1E+00 |");
  ASSERT_EQ(r.kind, Kind::kStep);
  EXPECT_EQ(r.step.step, 10);
  EXPECT_DOUBLE_EQ(r.step.step_time_s, 1.2345);
  r = p.feed("[Rank 0] (after 10 iterations) memory (MB) | allocated: 1000.0 | max allocated: 2048.0 | reserved: "
             "3000.0 | max reserved: 4096.0");
  ASSERT_EQ(r.kind, Kind::kPeakMemory);
  EXPECT_DOUBLE_EQ(r.peak_memory_bytes, 4096.0 * 1024 * 1024);
  r = p.feed("[Rank 0] (after 10 iterations) memory (MB) | allocated: 1000.0 | max allocated: 2048.0");
  EXPECT_DOUBLE_EQ(r.peak_memory_bytes, 2048.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*p.output().peak_memory_bytes, 4096.0 * 1024 * 1024);
}

TEST(Protocol, RecognisesOutOfMemoryMessages) {
  for (const char* line : {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                           "RuntimeError: CUDA out of memory.", "terminate called after throwing 'std::bad_alloc'",
                           "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory"}) {
    OutputParser p;
    EXPECT_EQ(p.feed(line).kind, Kind::kOom) << line;
    EXPECT_TRUE(p.output().oom);
    EXPECT_EQ(p.output().oom_line, line);
  }
}

// Issue 21: std::regex recursed per character and overflowed the stack on a ~40 kB line (the
// controller died with SIGSEGV, and again on every resume). RE2 matches in linear time without
// recursion: long lines, a pathological pattern and deeply nested JSON are harmless.
TEST(Protocol, NoLineCrashesTheParser) {
  OutputParser p(ParserOptions{R"(step time: ([0-9.]+))"});
  const std::string filler(40000, 'x');
  LineReport r = p.feed(filler + " step time: 0.5");
  ASSERT_EQ(r.kind, Kind::kStep);
  EXPECT_DOUBLE_EQ(r.step.step_time_s, 0.5);
  // Beyond the first kMaxMatchedLineBytes nothing is matched (and nothing is slow).
  EXPECT_EQ(p.feed(std::string(kMaxMatchedLineBytes, 'x') + " step time: 0.5").kind, Kind::kNothing);
  OutputParser nested(ParserOptions{R"((a|aa)*(a|aa)*c([0-9.]+))"});
  EXPECT_EQ(nested.feed(std::string(60000, 'a')).kind, Kind::kNothing);
  EXPECT_EQ(nested.feed("@paratune " + std::string(500000, '[')).kind, Kind::kMalformed);
  EXPECT_EQ(nested.feed("@paratune {\"metric\": \"x\", \"value\": " + std::string(200000, '[') + "}").kind,
            Kind::kMalformed);
}

TEST(Protocol, RegexInRe2SyntaxOrAClearError) {
  try {
    OutputParser p(ParserOptions{R"(took (\d+(?=s)))"});  // a lookahead: ECMAScript, not RE2
    FAIL() << "a lookahead was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a valid regular expression in RE2 syntax"), std::string::npos) << e.what();
  }
}

TEST(Protocol, UserRegexAndNoDoubleCounting) {
  OutputParser p(ParserOptions{R"(step (?:\d+) took ([0-9.]+) s)"});
  EXPECT_EQ(p.feed("step 1 took 0.5 s").kind, Kind::kStep);
  EXPECT_EQ(p.feed("step 2 took 0.25 s").kind, Kind::kStep);
  EXPECT_EQ(p.output().steps.back().step, 2);
  EXPECT_EQ(p.feed("step 3 took fast s").kind, Kind::kNothing);
  // The first protocol step replaces what the regex found and turns the regex off.
  p.feed(R"(@paratune {"step": 1, "step_time_s": 0.5})");
  EXPECT_EQ(p.feed("step 4 took 0.5 s").kind, Kind::kNothing);
  EXPECT_EQ(p.output().steps.size(), 1u);

  OutputParser numbered(ParserOptions{R"(t=([0-9.]+) at (\d+))"});
  EXPECT_EQ(numbered.feed("t=0.5 at 42").step.step, 42);

  EXPECT_THROW(OutputParser(ParserOptions{"(unclosed"}), Error);
  try {
    OutputParser(ParserOptions{"no group"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs a group"), std::string::npos);
  }
}

// Issue 21: a step time of 1e-320 s was taken, an infinite throughput chosen as the best trial. A
// step time or memory that is no measurement is a malformed line, from every source.
TEST(Protocol, ImplausibleMeasurementsAreMalformedNotMeasured) {
  OutputParser p;
  const char* bad[] = {
      R"(@paratune {"step": 1, "step_time_s": 1e-320})",   // subnormal: 1/t is infinite
      R"(@paratune {"step": 1, "step_time_s": 5e-7})",     // below a microsecond
      R"(@paratune {"step": 1, "step_time_s": -0.5})",
      R"(@paratune {"step": 1, "step_time_s": 1e300})",    // beyond a week
      R"(@paratune {"step": 18446744073709551615, "step_time_s": 0.5})",  // beyond INT64_MAX
      R"(@paratune {"peak_memory_bytes": 1e300})",
      R"(@paratune {"checkpoint_step": 18446744073709551615})",
      // Megatron: zero, negative, infinite, a step number that no int64 holds
      "iteration 3/ 10 | elapsed time per iteration (ms): 0",
      "iteration 3/ 10 | elapsed time per iteration (ms): -12",
      "iteration 3/ 10 | elapsed time per iteration (ms): inf",
      "iteration 1e300/ 10 | elapsed time per iteration (ms): 500",
      "memory (MB) | max allocated: inf",
      "memory (MB) | max reserved: nan",
  };
  for (const char* line : bad) EXPECT_EQ(p.feed(line).kind, Kind::kMalformed) << line;
  EXPECT_EQ(p.output().malformed_lines, static_cast<std::int64_t>(std::size(bad)));
  EXPECT_TRUE(p.output().steps.empty());
  EXPECT_FALSE(p.output().peak_memory_bytes.has_value());
  EXPECT_NE(p.output().first_malformed.find("'step_time_s' 1e-320 must be a finite number of seconds from 1e-06 to 604800"),
            std::string::npos)
      << p.output().first_malformed;
  // The ends of the ranges are measurements.
  EXPECT_EQ(p.feed(R"(@paratune {"step": 1, "step_time_s": 1e-6})").kind, Kind::kStep);
  EXPECT_EQ(p.feed(R"(@paratune {"step": 2, "step_time_s": 604800})").kind, Kind::kStep);
  EXPECT_EQ(p.feed(R"(@paratune {"peak_memory_bytes": 0})").kind, Kind::kPeakMemory);

  // A --step-time-regex line that matched with a time that is no measurement is malformed too.
  OutputParser regex(ParserOptions{R"(took (\S+) s at (\S+))"});
  for (const char* line : {"took 1e-320 s at 1", "took 0 s at 1", "took nan s at 1", "took 0.5.5 s at 1",
                           "took 0.5 s at -3", "took 0.5 s at 1.5", "took 0.5 s at seven"})
    EXPECT_EQ(regex.feed(line).kind, Kind::kMalformed) << line;
  EXPECT_TRUE(regex.output().steps.empty());
  const LineReport ok = regex.feed("took 0.5 s at 7");
  ASSERT_EQ(ok.kind, Kind::kStep);
  EXPECT_EQ(ok.step.step, 7);
}

}  // namespace
}  // namespace paratune::trial
