# Sourced by the runners of tools the tests need but did not write
# (stripe-mock, the providers' SDKs, toxiproxy with PostgreSQL).
# skip_or_fail VAR WHY...: without the tool the test is skipped (exit 77,
# CTest's SKIP_RETURN_CODE), unless VAR=1 says it is required (CI): then it
# fails, saying why.
skip_or_fail() {
  local var=$1
  shift
  if [ "${!var:-}" = 1 ]; then
    echo "FAIL: $var=1 but $*" >&2
    exit 1
  fi
  echo "skipped: $*"
  exit 77
}
