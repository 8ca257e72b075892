# Unity builds: a target's sources compiled a batch at a time, each batch one translation unit that
# includes its files. Most of paratune's compile time is parsing the same heavy headers (the standard
# library, nlohmann::json, fmt, Eigen, yaml-cpp, GoogleTest, libtorch) in every file: a batch parses
# them once. Measured on 8 library files at -O3: 41.1 s of CPU one by one, 26.0 s as one batch.
#
# CMake has unity builds of its own (UNITY_BUILD), but in CMake 3.25 its batch files include the
# sources by absolute path, so a compiler cache can never reuse them from a checkout in another folder
# (scripts/ccache_env.sh). These batch files include them by a path relative to the batch file, the
# same in every clone.
#
# The price: the files of a batch share one translation unit, so two of them must not define the
# same name in an anonymous namespace (or as a `static` function); the compiler says so when they do
# -- rename one. A file whose headers break others (cpp-httplib's macros break Eigen's) is compiled
# on its own: CMake's source property SKIP_UNITY_BUILD_INCLUSION. -DPARATUNE_UNITY_BUILD=OFF compiles
# every file on its own.
option(PARATUNE_UNITY_BUILD "Compile the sources in batches (cmake/unity.cmake)" ON)
set(PARATUNE_UNITY_BATCH_SIZE 8 CACHE STRING "Source files per unity batch")

# paratune_unity_sources(TARGET OUT_VAR SOURCES...): OUT_VAR is the list to compile -- the batch files,
# with the sources listed as headers (so IDEs still show them), or the sources as they are when
# unity builds are off. Files with a .cc suffix are batched; anything else, generated files and those
# marked SKIP_UNITY_BUILD_INCLUSION are passed through.
function(paratune_unity_sources target out)
  set(sources ${ARGN})
  if(NOT PARATUNE_UNITY_BUILD)
    set(${out} ${sources} PARENT_SCOPE)
    return()
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/unity)
  set(result "")
  set(batch "")
  set(count 0)
  set(index 0)
  foreach(source IN LISTS sources)
    get_filename_component(absolute ${source} ABSOLUTE)
    get_source_file_property(generated ${absolute} GENERATED)
    get_source_file_property(alone ${absolute} SKIP_UNITY_BUILD_INCLUSION)
    if(NOT absolute MATCHES "\\.cc$" OR generated OR alone)
      list(APPEND result ${source})
      continue()
    endif()
    file(RELATIVE_PATH relative ${dir} ${absolute})
    # bugprone-suspicious-include: clang-tidy checks these batch files (scripts/tidy.sh).
    string(APPEND batch "#include \"${relative}\"  // NOLINT(bugprone-suspicious-include): a unity batch\n")
    set_source_files_properties(${absolute} PROPERTIES HEADER_FILE_ONLY ON)
    list(APPEND result ${absolute})
    math(EXPR count "${count} + 1")
    if(count EQUAL PARATUNE_UNITY_BATCH_SIZE)
      paratune_write_batch(${dir}/${target}_${index}.cc "${batch}")
      list(APPEND result ${dir}/${target}_${index}.cc)
      set(batch "")
      set(count 0)
      math(EXPR index "${index} + 1")
    endif()
  endforeach()
  if(count GREATER 0)
    paratune_write_batch(${dir}/${target}_${index}.cc "${batch}")
    list(APPEND result ${dir}/${target}_${index}.cc)
  endif()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# Writes a batch file only when its text changed, so that configuring again rebuilds nothing.
function(paratune_write_batch path text)
  file(WRITE ${path}.new "${text}")
  configure_file(${path}.new ${path} COPYONLY)
  file(REMOVE ${path}.new)
  # g++ reads every file a batch includes as a header, and warns of a class there whose member has a
  # type from an anonymous namespace (-Wsubobject-linkage: in a real header, an ODR hazard). In a
  # batch those are the sources' own file-local types, used as in a file compiled alone.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set_source_files_properties(${path} PROPERTIES COMPILE_OPTIONS -Wno-subobject-linkage)
  endif()
endfunction()
