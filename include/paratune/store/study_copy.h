// Whole studies between and within stores: `paratune study copy FROM TO` moves them (SQLite <->
// PostgreSQL, or two of a kind) with every trial, step and metric; `paratune study delete` removes one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paratune/store/study_store.h"

namespace paratune::store {

struct CopySummary {
  std::vector<std::string> studies;  // the names copied, in `from`'s order
  std::int64_t trials = 0, steps = 0, metrics = 0;
};

// Copies the study `name` of `from` (empty: every study) into `to`, in one transaction on `to`, as
// `new_name` when given (which needs `name`). Throws Error when `from` has no such study (naming the
// ones it has) or holds no study, and when `to` already has a study of a copied name (nothing is
// written then).
CopySummary copy_studies(const StudyStore& from, StudyStore& to, const std::string& name = "",
                         const std::string& new_name = "");

// Deletes the study `name` with every trial, step and metric; returns how many trials it held.
// Throws Error when `store` has no such study (naming the ones it has), and when a controller or a
// worker is running it (the controller lock; nothing is deleted then).
std::int64_t delete_study(StudyStore& store, const std::string& name);

}  // namespace paratune::store
