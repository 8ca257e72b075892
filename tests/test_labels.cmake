# Labels of the GoogleTest suite's tests, for `ctest -L LABEL` / `-LE LABEL` (docs/development.md).
# ctest reads this file after gtest_discover_tests has listed each binary's tests (suite.cmake), so
# the test names are in paratune_tests_TESTS and paratune_train_tests_TESTS. Every test gets one of
#   unit         in-process: no program, server or browser started (the fast tier: seconds)
#   integration  runs paratune's programs or trial processes as a user would
#   servers      starts a real server of its own on loopback (sshd, Slurm, PostgreSQL)
#   browser      loads pages in headless Chromium
# and, when it took 15 s or more in the sanitized build, also "slow". A suite not listed is unit.
# (list(FIND), not if(IN_LIST): ctest reads this file under CMake's oldest policies.)
set(paratune_servers_suites SlurmCli SshCli SshCliStudy SshTrials SlurmJobs)
set(paratune_browser_suites HtmlReport HtmlHostile)
set(paratune_integration_suites
  ConfigStudy CalibrateCli Cli ProfileCli DashboardClients FailingRegion OldStudies OptionFlags PlanCli PlanProgressCli RangesCli TuneCli TuneLiveBlock HpoCli HpoStudy HpoManyObjectives ServedTrials
  Study Runner Launch LaunchDeepSpeed LaunchTorchtitan SimReport
  TrainCheckpoint TrainDeterminism TrainLauncher TrainModels TrainProfile TrainProtocol TrainStrategies TrainTune
  FusedTraining Harvest MupTrainer)
# Measured: the tests that took 15 s or more in the sanitized build (scripts/sanitize.sh -j2 on 2 cores
# shared with builds, 2026-11-26). ctest starts them first (COST), so that none is left to run alone
# at the end of a parallel run.
set(paratune_slow_tests
  FrameworkSupport.EveryPresetsDefaultWinnerRunsOnAFramework
  FusedTraining.ADivergingMemberLeavesTheOthersUntouched
  FusedTraining.EachMemberFollowsTheCurveItTrainsAlone
  FusedTraining.MembersThatDifferInASharedOptionAreRefused
  GpSampler.AvoidsARegionThatFails
  GpSampler.BeatsRandomSearchOnBranin
  Harvest.TrialsRunOnlyInsideTheirRanksBubbles
  Harvest.TrialsThatNeverStepAreGivenUpAndMissingProgramsRefused
  ModelSearch.LearnsWhereConfigurationsAreRefused
  ModelSearch.OppaFindsTheSimulatedOptimumQuickly
  MupTrainer.CoordinateCheckGptBlocksStayFlatUnderMupAndGrowUnderSp
  MupTrainer.CoordinateCheckMlpLogitsStayFlatUnderMupAndGrowUnderSp
  Planner.TopPlansEqualBruteForceMoe
  SamplerFeasibility.ARefusedConfigurationIsNeverProposedAgain
  SamplerFeasibility.StaysOutOfARegionThatIsRefused
  SlurmCli.ControllerKilledWithSigkillLeavesNoJobAndTheStudyResumes
  SlurmCli.HyperparameterStudyRunsAsSlurmJobs
  SlurmJobs.TimeInTheQueueIsNotCountedAgainstTheLimits
  Space.EnumerationIsExactlyWhatResolveAccepts
  TpeConditional.ProposalsHoldEveryActiveParameterAndNoInactiveOne
  TpeFailures.ARegionThatAlwaysFailsIsProposedLessOftenThanByRandom
  TpeFailures.FailedTrialsInTheBadGroupKeepProposalsOffTheFailingEdge
  TrainCheckpoint.ResumingContinuesTheSameCurveBitForBit
  TrainDeterminism.SameSeedSameCurveBitForBit
  TrainProtocol.BadInputIsAClearErrorBeforeTraining
  TrainProtocol.EveryStepReportsLossThenItsStepLine
  TrainStrategies.DpMpAndGpipeFollowTheSameCurveAsNone
  TrainTune.AGridStudyOverTwoLearningRatesRunsTheTrainer
  TrainTune.AshaStudyResumesTheTrainerFromItsCheckpoints
  TrainTune.FuseAutoPicksItsSizeFromTheProbeAndAshaPromotesMembersAlone
  TrainTune.FusedGroupsLoseOnlyTheirFailingMembers
  TrainTune.FusedTrialsGetTheObjectiveTheyGetAlone
  TrainTune.ServedAshaStudyLoadsTheDataOnceAndMatchesProcessPerRun
  TrainTune.StrategyAutoGivesEachTrialTheCostModelsChoice
  TrainTune.SurrogateStudyRetrainsItsTopTwoAtTheTargetAndChoosesThere
  TrainTune.SurrogateStudyTunesANarrowModelAndRetrainsTheTarget
  TuneCli.EveryAlgorithmRunsOnTheSimulatedCluster)

foreach(paratune_test IN LISTS paratune_tests_TESTS paratune_train_tests_TESTS)
  string(REGEX REPLACE "\\..*" "" paratune_suite "${paratune_test}")
  set(paratune_labels unit)
  foreach(paratune_kind servers browser integration)
    list(FIND paratune_${paratune_kind}_suites "${paratune_suite}" paratune_found)
    if(paratune_found GREATER -1)
      set(paratune_labels ${paratune_kind})
      break()
    endif()
  endforeach()
  list(FIND paratune_slow_tests "${paratune_test}" paratune_found)
  if(paratune_found GREATER -1)
    list(APPEND paratune_labels slow)
    set_tests_properties("${paratune_test}" PROPERTIES COST 100)
  endif()
  set_tests_properties("${paratune_test}" PROPERTIES LABELS "${paratune_labels}")
endforeach()
