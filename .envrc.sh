# source me: tests in this worktree import kchaos from here, with main's venv
export PYTHONPATH=/work/wt-final/.pypath
export PATH=/work/main/.venv/bin:$PATH
cd /work/wt-final
