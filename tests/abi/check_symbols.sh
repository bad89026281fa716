#!/usr/bin/env bash
# Fails when the library's exported symbols differ from the checked-in list:
# a pay_ symbol that disappeared, or anything exported that is not listed.
set -euo pipefail
lib=$1 list=$2
actual=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | sort -u)
expected=$(grep -v '^#' "$list" | sed '/^$/d' | sort -u)
if [ "$actual" != "$expected" ]; then
  echo "exported symbols differ from $list (< expected, > actual):"
  diff <(echo "$expected") <(echo "$actual") || true
  exit 1
fi
echo "ok: $(echo "$actual" | wc -l) exported symbols, all listed, all pay_"
