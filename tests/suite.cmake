# The GoogleTest suite (PARATUNE_BUILD_TESTS), included by tests/CMakeLists.txt: three binaries, their
# tests discovered one ctest entry each, and labelled by test_labels.cmake when ctest reads them.
find_package(GTest REQUIRED)
find_package(SQLite3 REQUIRED)  # the store tests write an old-schema file
include(GoogleTest)
file(GLOB_RECURSE PARATUNE_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
# tests/trainer needs libtorch: its own executable (below), so the rest builds without torch headers.
list(FILTER PARATUNE_TEST_SOURCES EXCLUDE REGEX "/tests/trainer/")
# tests/store runs against SQLite and a private PostgreSQL server: its own executable (below).
list(FILTER PARATUNE_TEST_SOURCES EXCLUDE REGEX "/tests/store/")
# What every test binary shares: test_main.cc (each test process gets its own temporary directory)
# and test_paths.cc -- the source tree, the build tree and the programs the tests run, compiled into
# that one file and read through the macros of test_paths.h, which is force-included into every test
# file. No other test file's compile command names an absolute path, so ccache reuses test objects
# across checkouts in different folders (scripts/ccache_env.sh).
add_library(paratune_test_support STATIC ${CMAKE_CURRENT_SOURCE_DIR}/test_main.cc ${CMAKE_CURRENT_SOURCE_DIR}/test_paths.cc)
target_link_libraries(paratune_test_support PUBLIC paratune_lib GTest::gtest)
target_compile_options(paratune_test_support PUBLIC -include ${CMAKE_CURRENT_SOURCE_DIR}/test_paths.h)
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/test_paths.cc PROPERTIES COMPILE_DEFINITIONS
  "PARATUNE_PATH_SOURCE_DIR=\"${PROJECT_SOURCE_DIR}\";PARATUNE_PATH_BUILD_DIR=\"${CMAKE_BINARY_DIR}\";\
PARATUNE_PATH_PARATUNE=\"$<TARGET_FILE:paratune>\";PARATUNE_PATH_FAKE_TRIAL=\"$<TARGET_FILE:paratune_fake_trial>\";\
PARATUNE_PATH_SLURM_JOB=\"$<TARGET_FILE:paratune-slurm-job>\";PARATUNE_PATH_SIM_TRIAL=\"$<TARGET_FILE:paratune-sim-trial>\";\
PARATUNE_PATH_FUNCTION_TRIAL=\"$<TARGET_FILE:paratune-function-trial>\";PARATUNE_PATH_TRAIN=\"$<TARGET_FILE:paratune-train>\"")
# tests/support: the real servers the tests start themselves (a Slurm cluster, sshd; PostgreSQL for
# the store tests, below).
paratune_unity_sources(paratune_tests PARATUNE_TEST_SOURCES ${PARATUNE_TEST_SOURCES})
add_executable(paratune_tests ${PARATUNE_TEST_SOURCES}
               ${CMAKE_CURRENT_SOURCE_DIR}/support/slurm_cluster.cc ${CMAKE_CURRENT_SOURCE_DIR}/support/ssh_server.cc)
# Warnings as in the library, less two that the tests' idioms trip by design: gtest's EXPECT macros
# are if/else statements (a loop body `if (x) EXPECT_...` reads as a dangling else), and aggregate
# initializers that leave trailing fields at their defaults are how tests build their inputs.
set(PARATUNE_TEST_WARNINGS -Wall -Wextra -Wno-dangling-else -Wno-missing-field-initializers)
target_link_libraries(paratune_tests PRIVATE paratune_test_support paratune_simcluster SQLite::SQLite3)
target_compile_options(paratune_tests PRIVATE ${PARATUNE_TEST_WARNINGS})
add_dependencies(paratune_tests paratune paratune-slurm-job paratune_fake_trial paratune-sim-trial paratune-function-trial)
gtest_discover_tests(paratune_tests DISCOVERY_TIMEOUT 60)

# The study stores (tests/store), each test on SQLite and on PostgreSQL, and `paratune tune` and
# `study copy` on PostgreSQL. One ctest entry runs the whole binary, so that the PostgreSQL server
# (tests/support/postgres_server.h: initdb + pg_ctl, a few seconds) starts once, not once per test.
# It skips the PostgreSQL tests when the server cannot start, unless PARATUNE_REQUIRE_SERVERS=1
# (scripts/test.sh), where they fail.
file(GLOB PARATUNE_STORE_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/store/*_test.cc)
paratune_unity_sources(paratune_store_tests PARATUNE_STORE_TEST_SOURCES ${PARATUNE_STORE_TEST_SOURCES})
add_executable(paratune_store_tests ${PARATUNE_STORE_TEST_SOURCES} ${CMAKE_CURRENT_SOURCE_DIR}/support/postgres_server.cc)
target_link_libraries(paratune_store_tests PRIVATE paratune_test_support SQLite::SQLite3 PkgConfig::LIBPQ)
target_compile_options(paratune_store_tests PRIVATE ${PARATUNE_TEST_WARNINGS})
add_dependencies(paratune_store_tests paratune paratune_fake_trial paratune-function-trial)
add_test(NAME StudyStores.SqliteAndPostgres COMMAND paratune_store_tests)
set_tests_properties(StudyStores.SqliteAndPostgres PROPERTIES TIMEOUT 600 LABELS "servers;slow" COST 200)

# paratune-train (libtorch): model shapes, protocol, determinism, strategy equivalence, a killed rank,
# and a `paratune tune` study running it.
file(GLOB PARATUNE_TRAINER_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/trainer/*_test.cc)
paratune_unity_sources(paratune_train_tests PARATUNE_TRAINER_TEST_SOURCES ${PARATUNE_TRAINER_TEST_SOURCES})
add_executable(paratune_train_tests ${PARATUNE_TRAINER_TEST_SOURCES})
target_link_libraries(paratune_train_tests PRIVATE paratune_test_support paratune_trainer SQLite::SQLite3)
target_compile_options(paratune_train_tests PRIVATE ${PARATUNE_TEST_WARNINGS})
add_dependencies(paratune_train_tests paratune paratune-train paratune_fake_trial)
gtest_discover_tests(paratune_train_tests DISCOVERY_TIMEOUT 60)

# Labels for `ctest -L/-LE`: read after the discovered tests (a ctest include file runs in order).
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${CMAKE_CURRENT_SOURCE_DIR}/test_labels.cmake)
