// Where `paratune tune` runs its trials (--backend local | ssh | slurm), from tune's flags.
#pragma once

#include <memory>
#include <string>

#include "paratune/trial/runner.h"
#include "tune_flags.h"

namespace paratune::cli {

// The backend --backend names, set up from its flags; a flag of another backend is refused.
std::unique_ptr<trial::Backend> backend_from(const TuneFlags& f);

// "4 slot(s)", "6 slot(s) on 2 hosts over ssh": for the line a study starts with.
std::string slots_line(const trial::Backend& backend);

}  // namespace paratune::cli
