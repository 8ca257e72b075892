// Ended trials' outputs kept between reads (store/output_cache.h).
#include "paratune/store/output_cache.h"

namespace paratune::store {
namespace {

// A trial still running (or told to run again) may add steps and metrics at any time.
bool ended(const StoredTrial& t) { return t.status != "running"; }

}  // namespace

bool OutputCache::current(const Entry& e, const StoredTrial& t) {
  return e.number == t.number && e.status == t.status && e.started_unix_s == t.started_unix_s &&
         e.ended_unix_s == t.ended_unix_s && e.steps == t.steps && e.objective == t.objective &&
         e.hpo_json == t.hpo_json;
}

std::vector<StoredTrial*> OutputCache::fill(std::vector<StoredTrial>& trials) const {
  const std::lock_guard lock(mutex_);
  std::vector<StoredTrial*> to_read;
  for (StoredTrial& t : trials) {
    const auto it = entries_.find(t.id);
    if (it == entries_.end() || !ended(t) || !current(it->second, t)) {
      to_read.push_back(&t);
      continue;
    }
    t.step_numbers = it->second.step_numbers;
    t.step_times_s = it->second.step_times_s;
    t.metrics = it->second.metrics;
  }
  return to_read;
}

void OutputCache::keep(const std::vector<StoredTrial*>& read) {
  const std::lock_guard lock(mutex_);
  for (const StoredTrial* t : read) {
    if (!ended(*t)) {
      entries_.erase(t->id);
      continue;
    }
    entries_[t->id] = Entry{t->number,    t->status,   t->started_unix_s, t->ended_unix_s, t->steps,
                            t->objective, t->hpo_json, t->step_numbers,   t->step_times_s, t->metrics};
  }
}

std::size_t OutputCache::size() const {
  const std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace paratune::store
