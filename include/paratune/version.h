// The version of paratune, and the commit it was built from (`paratune --version`).
#pragma once

namespace paratune {

// The release version, "MAJOR.MINOR.PATCH" (CMakeLists.txt's project(VERSION); CHANGELOG.md).
const char* version();

// The git commit the sources were at when built: 12 hex digits, "+modified" when tracked files
// differed from it, "unknown" outside a git checkout (a source tarball).
const char* build_commit();

}  // namespace paratune
