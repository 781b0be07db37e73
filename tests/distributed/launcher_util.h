// For the tests that run trainrun under real launchers (tests/distributed/mpirun_test.cpp, tests/distributed/slurm_test.cpp).
#pragma once

#include <string>

#include <unistd.h>  // environ

namespace trainrun::test {

// `env -u NAME ...` for every SLURM_*, OMPI_*, PMIX_* and torchrun variable this test process
// has: when the tests themselves run inside a SLURM job or under mpirun/torchrun, srun would look
// for the outer job's id in the test cluster, mpirun would launch through the outer allocation,
// and trainrun would take the outer launcher's rank. Nothing is set, only removed.
inline std::string without_enclosing_launcher() {
  std::string cmd = "env";
  for (char** e = environ; *e; ++e) {
    std::string var(*e);
    std::string name = var.substr(0, var.find('='));
    if (name.rfind("SLURM_", 0) == 0 || name.rfind("OMPI_", 0) == 0 || name.rfind("PMIX_", 0) == 0 ||
        name == "RANK" || name == "WORLD_SIZE" || name == "LOCAL_RANK" || name == "LOCAL_WORLD_SIZE" ||
        name == "MASTER_ADDR" || name == "MASTER_PORT")
      cmd += " -u " + name;
  }
  return cmd + " ";
}

}  // namespace trainrun::test
