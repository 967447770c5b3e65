#!/usr/bin/env bash
# Installs what the build needs when it is missing (Debian/Ubuntu): CMake, Ninja, GoogleTest,
# Python 3 with venv (docs/ops.md's generator and its staleness test; the Python package's tests).
# The CUDA 13 toolkit itself is a precondition (README: Requirements).
set -euo pipefail
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
[ -f /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
command -v python3 >/dev/null || need+=(python3)
# the Python package's tests run in a throwaway venv (Debian's python3 needs python3-venv for it)
python3 -c "import ensurepip, venv" 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}"
fi
if ! command -v nvcc >/dev/null; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH
  else echo "setup: the CUDA toolkit (nvcc) is required; see README" >&2; exit 1; fi
fi
