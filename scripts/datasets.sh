# Sourced by the reproduction scripts: sets $data to the benchmark data sets
# (../shared/datasets beside the repository, or $DATASETS) and stops with a
# message saying how to point at them when they are not there, instead of
# failing later on a missing file.
data=${DATASETS:-../shared/datasets}
if [ ! -d "$data" ]; then
  echo "$(basename "$0"): no data sets at $data." >&2
  echo "  Set DATASETS to the folder that holds them (a9a/, usps/, pendigits/, letter/, mnist/, events/, ..., as listed in docs/reproduction.md), e.g." >&2
  echo "  DATASETS=/path/to/datasets $0 $*" >&2
  exit 2
fi
