# Installs the Slurm scripts (scripts/slurm/) with the path of the tracefuse installed with them:
# sbatch runs a copy of a job script from Slurm's spool directory, where "beside itself" means
# nothing, so the path is written into the scripts at install time (`cmake --install --prefix`
# and CPack's staging included). Set by install(CODE) before this runs: TRACEFUSE_SLURM_SOURCES,
# TRACEFUSE_SLURM_STAGING (a build directory), TRACEFUSE_BINDIR and TRACEFUSE_SLURM_DIR.
# Staged per destination, so that installs into several prefixes at once do not collide.
string(MD5 destination "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
set(staging "${TRACEFUSE_SLURM_STAGING}/slurm-${destination}")
foreach(script compare-array.sbatch submit)
  file(READ "${TRACEFUSE_SLURM_SOURCES}/${script}" text)
  set(placeholder "installed_tracefuse=\"\"")
  string(FIND "${text}" "${placeholder}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "scripts/slurm/${script} has no line ${placeholder}")
  endif()
  string(REPLACE "${placeholder}"
         "installed_tracefuse=\"${CMAKE_INSTALL_PREFIX}/${TRACEFUSE_BINDIR}/tracefuse\""
         text "${text}")
  file(WRITE "${staging}/${script}" "${text}")
  file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${TRACEFUSE_SLURM_DIR}" TYPE PROGRAM
       FILES "${staging}/${script}")
endforeach()
