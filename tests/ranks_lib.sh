# shellcheck shell=bash
# What the straggler tests share (tests/ranks_test.sh, tests/slurm/ranks_test.sh); source it.
#
#   generate_ranks GEN DIR   # DIR/amd/rank{0..7}.json: an 8-rank AMD run, rank 5 computing 1.3x
#                            # as long; DIR/nvidia/rank{0..7}.json: an 8-rank NVIDIA run without
#                            # a slow rank; DIR/{amd,nvidia}.expected.json: what they planted
generate_ranks() {
  local gen=$1 dir=$2 rank
  mkdir -p "$dir/amd" "$dir/nvidia"
  for rank in 0 1 2 3 4 5 6 7; do
    "$gen" --platform amd --steps 4 --seed 7 --world-size 8 --rank "$rank" --slow-rank 5 \
      --expect-ranks "$dir/amd.expected.json" -o "$dir/amd/rank$rank.json"
    "$gen" --platform nvidia --steps 4 --seed 7 --world-size 8 --rank "$rank" \
      --expect-ranks "$dir/nvidia.expected.json" -o "$dir/nvidia/rank$rank.json"
  done
}
