#!/usr/bin/env bash
# What the tests of `batch --by-op` share (merge_by_op_test.sh, slurm/by_op_test.sh).

# write_by_op_manifest GEN SHARED DIR: DIR/manifest.tsv of eager pairs: three generated ranks
# with planted fusion differences (tracefuse-gen --eager), the last with NVIDIA first, and, where
# SHARED (../shared) holds them, the real eager pairs of two models and one of them reversed.
write_by_op_manifest() {
  local gen=$1 shared=$2 dir=$3 rank
  printf 'label\ttrace1\ttrace2\n' >"$dir/manifest.tsv"
  for rank in 0 1 2; do
    local first=amd
    [ "$rank" -lt 2 ] || first=nvidia
    "$gen" --eager --platform "$first" --seed $((rank + 1)) --steps 3 \
      -o "$dir/rank$rank.1.json" --pair-output "$dir/rank$rank.2.json"
    printf 'rank%s\trank%s.1.json\trank%s.2.json\n' "$rank" "$rank" "$rank" >>"$dir/manifest.tsv"
  done
  local real=$shared/traces/real
  if [ -f "$real/tl_mi300_falconsai_nsfw.json.gz" ] && [ -f "$real/tl_h100_falconsai_nsfw.json.gz" ] &&
    [ -f "$real/tl_mi300_timesformer.json.gz" ] && [ -f "$real/tl_h100_timesformer.json.gz" ]; then
    printf 'falcon\t%s\t%s\n' "$real/tl_mi300_falconsai_nsfw.json.gz" \
      "$real/tl_h100_falconsai_nsfw.json.gz" >>"$dir/manifest.tsv"
    printf 'timesformer\t%s\t%s\n' "$real/tl_mi300_timesformer.json.gz" \
      "$real/tl_h100_timesformer.json.gz" >>"$dir/manifest.tsv"
    printf 'falcon_reversed\t%s\t%s\n' "$real/tl_h100_falconsai_nsfw.json.gz" \
      "$real/tl_mi300_falconsai_nsfw.json.gz" >>"$dir/manifest.tsv"
  else
    echo "note: $real is missing: the generated pairs only"
  fi
}
