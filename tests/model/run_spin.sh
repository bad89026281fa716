#!/usr/bin/env bash
# Checks settlement.pml with SPIN against one built-in profile's decision table,
# or operations.pml (refunds of one payment) against the operations tables
# (PROFILE "operations": model_gen_tables operations).
#
#   run_spin.sh GEN MODEL WORKDIR holds PROFILE [-Dswitch...]
#       The model must hold (with the switches given, the profile's world): pan finds no error and explores the whole state
#       space (no "Search not completed", no "max search depth too small"), in
#       each configuration below, and reaches every marker the model sets
#       ("must be reached"). Prints the state counts.
#   run_spin.sh GEN MODEL WORKDIR revert PROFILE N HARM
#       With fix N reverted (-DREVERT_FIXN) and only the invariant HARM
#       checked (double_charge | failed_but_charged, the money invariants;
#       foreign_id_taken: the row never takes the foreign payment's id;
#       shipped_unpaid | money_failed_but_charged | money_moved_back, the
#       row's money state's; over_refund | second_movement |
#       unsettled_parent | ledger_spent, operations.pml's; with -DEVENTS
#       succeeded_unmoved | failed_but_moved | event_elsewhere, its refund
#       notifications'), pan must
#       find an error, and its trail must violate that invariant. Prints the
#       trail as a story.
#   run_spin.sh GEN MODEL WORKDIR reverted PROFILE RULE HARM [-Dswitch...]
#       GEN was built from the code with RULE reverted (tests/model/reverts/):
#       as revert, with the tables that generator prints and only the
#       switches given (the world the harm needs, e.g. -DMAXATT=1).
#   run_spin.sh GEN - - covers PROFILE...
#       The profiles given are exactly the library's built-in ones.
#   run_spin.sh GEN MODEL WORKDIR check PROFILE [-Dswitch...]
#       By hand: one run with extra switches; prints the result and, if pan
#       found an error, the trail (SEARCH=bfs: the shortest one).
#
# GEN is model_gen_tables; SPIN and CC may name spin and the C compiler.
set -euo pipefail
gen=$1 model=$2 work=$3 mode=$4
shift 4
spin=${SPIN:-spin}
cc=${CC:-cc}
search=${SEARCH:-dfs}
self=$(readlink -f "$0")

if [ "$mode" = covers ]; then
  want=$(printf '%s\n' "$@" | sort)
  have=$("$gen" --list | sort)
  if [ "$want" != "$have" ]; then
    echo "the model's profile list (tests/model/CMakeLists.txt) differs from the built-in profiles:" >&2
    diff <(echo "$want") <(echo "$have") >&2 || true
    exit 1
  fi
  echo "every built-in profile is checked: $(echo $have)"
  exit 0
fi

profile=$1
shift
dir="$work/$profile-$mode${1:+-$1}"
rm -rf "$dir"
mkdir -p "$dir"
"$gen" "$profile" > "$dir/tables.pml"
pml=$(basename "$model")   # settlement.pml or operations.pml: spin, pan and the trail use its name
cp "$model" "$dir/$pml"
cd "$dir"

# One exhaustive run: spin generates pan.c with the switches, cc builds it, pan
# searches: depth first with states stored collapsed (exact, smaller) to prove
# the model holds; breadth first (search=bfs) to find the shortest trail to an
# error. The hash table has 2^25 slots. Two searches of the same model are one:
# the first to get there checks it, the others wait for it and reuse its output
# (cache/, keyed by the model as spin reads it, tables and switches applied by
# the C preprocessor, so that two profiles whose tables differ only in what
# the search leaves out, a name, comments, the webhook tables of a search
# without webhooks, share it; and by this script, the search and spin's
# version; only a search that found no error is reused). PAYRETRY_SPIN_CACHE
# names a cache that outlives the build tree (.ci/test keeps one in the user's
# cache folder, so that a CI run on a clean clone searches again only the
# models that changed): the key is the whole input of the search, so a result
# reused from it is the result the search would find again. Entries unused
# for 30 days are dropped.
cache=${PAYRETRY_SPIN_CACHE:-$work/cache}
verify() {  # verify NAME SWITCH... ; leaves pan's output in NAME.out
  local name=$1
  shift
  local key
  key=$( { "$cc" -std=gnu99 -E -P -x c "$@" "$pml" | grep -v '^ *$';
           cat "$self"; echo "$search $*"; "$spin" -V; } | sha256sum | cut -c1-16)
  mkdir -p "$cache"
  find "$cache" -type f -mtime +30 -delete 2>/dev/null || true
  local start=$SECONDS note=""
  exec 9> "$cache/$key.lock"
  flock 9
  if [ -s "$cache/$key.out" ] && grep -q 'errors: 0' "$cache/$key.out"; then
    touch "$cache/$key.out" "$cache/$key.fsm" "$cache/$key.who"   # used: kept another 30 days
    cp "$cache/$key.out" "$name.out"
    cp "$cache/$key.fsm" "$name.fsm"
    note=" (reused: the search made for $(cat "$cache/$key.who"), the same model)"
  else
    # Depth first, -o3: no statement merging, so that pan -d lists every
    # statement's states (the markers below); a few per cent more states.
    if [ "$search" = bfs ]; then spinflags=(); else spinflags=(-o3); fi
    "$spin" "${spinflags[@]}" "$@" -a "$pml" > "$name.spin" 2>&1 || { cat "$name.spin" >&2; exit 1; }
    if [ "$search" = bfs ]; then searchflags=(-DBFS); else searchflags=(-DCOLLAPSE); fi
    "$cc" -O2 -DSAFETY "${searchflags[@]}" -DMEMLIM=6144 -w -o "pan-$name" pan.c
    local TIMEFORMAT='%U'   # pan's CPU seconds, whatever else the machine runs
    { time "./pan-$name" -m20000 -w25 > "$name.out" 2>&1 || true; } 2> "$name.cpu"
    echo "cpu $(cat "$name.cpu") s" >> "$name.out"
    "./pan-$name" -d > "$name.fsm"
    cp "$name.fsm" "$cache/$key.fsm"
    cp "$name.out" "$cache/$key.out"
    echo "$profile" > "$cache/$key.who"
  fi
  exec 9>&-
  echo "$name: $(grep -o 'errors: [0-9]*' "$name.out" | head -1), $(awk '/states, stored/{s=$1} /states, matched/{m=$1} /depth reached/{for(i=1;i<=NF;i++) if($i=="reached") d=$(i+1)} /^cpu /{c=$2} END{printf "%s states stored, %s matched, depth %s, search %s s CPU", s, m, d, c}' "$name.out" | tr -d ','), $((SECONDS - start)) s in all$note"
}

errors_of() { grep -o 'errors: [0-9]*' "$1.out" | head -1 | awk '{print $2}'; }

exhausted() {  # the search covered everything
  local out=$1.out
  grep -q 'Full statespace search' "$out" || { echo "FAIL: not a full state-space search" >&2; return 1; }
  if grep -qiE 'search not completed|max search depth too small|out of memory|aborted' "$out"; then
    echo "FAIL: the search was cut short:" >&2
    grep -iE 'search not completed|max search depth too small|out of memory|aborted' "$out" >&2
    return 1
  fi
}

# The markers the model sets ("seen_mark = N  /* must be reached */";
# "... must be reached if FLAG */" where tables.pml defines FLAG as 1 or the
# search's switches have -DFLAG; "... must be reached unless FLAG */" where
# they do not) that no state of the search reached: a check that never
# charged, never took a row over or never re-sent would pass without meaning
# anything. A marker's states are in pan -d; the ones the search never
# reached are in its "unreached" list.
unreached_markers() {
  local name=$1 marks k all un flag
  shift   # the search's switches: -DNO_<FLAG> takes FLAG's markers out (-DNO_WEBHOOKS: FOREIGN_EVENT's and EVENT_MONEY's too)
  marks=$(grep -E 'seen_mark = [0-9]+;? +/\* must be reached \*/' "$pml" | grep -oE 'seen_mark = [0-9]+' | grep -oE '[0-9]+')
  for flag in $(grep -oE 'must be reached if [A-Z_]+' "$pml" | awk '{print $5}' | sort -u); do
    off=$flag
    case $flag in FOREIGN_EVENT|EVENT_MONEY) off=WEBHOOKS ;; esac
    if { grep -qE "^#define $flag 1( |\$)" tables.pml && ! printf '%s\n' "$@" | grep -qx -- "-DNO_$off"; } ||
       printf '%s\n' "$@" | grep -qx -- "-D$flag"; then
      marks="$marks $(grep -E "seen_mark = [0-9]+;? +/\\* must be reached if $flag \\*/" "$pml" |
                      grep -oE 'seen_mark = [0-9]+' | grep -oE '[0-9]+')"
    fi
  done
  for flag in $(grep -oE 'must be reached unless [A-Z_]+' "$pml" | awk '{print $5}' | sort -u); do
    if ! printf '%s\n' "$@" | grep -qx -- "-D$flag"; then
      marks="$marks $(grep -E "seen_mark = [0-9]+;? +/\\* must be reached unless $flag \\*/" "$pml" |
                      grep -oE 'seen_mark = [0-9]+' | grep -oE '[0-9]+')"
    fi
  done
  for k in $marks; do
    all=$(grep -E "=> seen_mark = $k\$" "$name.fsm" | awk '{print $2}' | sort -u)
    un=$(grep -E "state [0-9]+, \"seen_mark = $k\"" "$name.out" | grep -oE 'state [0-9]+' | awk '{print $2}' | sort -u)
    if [ -z "$all" ] || [ -z "$(comm -23 <(echo "$all") <(echo "$un"))" ]; then
      echo "$(grep -E "seen_mark = $k[; ]" "$pml" | sed 's/^ *//' | head -1)"
    fi
  done
}

story() {  # the trail of the last error, as the model narrates it (operations.pml has no clock: "wN: ...")
  "$spin" -t "$@" "$pml" 2>&1 | sed -E 's/^[[:space:]]+//; s/^((t=[0-9]+ )?w[0-9]:)[[:space:]]+/\1 /; /^w[0-9]+:/s/[[:space:]]+/ /g' |
    grep -E '^t=[0-9]+|^w[0-9]+: |text of failed assertion' || true
}

case $mode in
  holds)
    # Two worlds: two workers whose runs may follow or overlap (worker 1 submits
    # and may come back once, as a submit or a reconcile; worker 2 runs either
    # once), and three workers at once (the client's submit, another worker's
    # submit, the client's reconcile).
    status=0
    # And the sequential world once more with one attempt per run, so that
    # every run's first attempt is its last (the rules for a last attempt,
    # read_unauthorized()'s among them, meet a history with nothing in it).
    # The webhook process (where the profile reads notifications) is in the
    # sequential world only: it multiplies the interleavings, and the
    # sequential world's overlapping runs already meet it IN_FLIGHT, after a
    # takeover, in a reconcile and after a final settle.
    # operations.pml has one world per test: its workers, payments and amounts
    # are drawn in it; -DEVENTS is its refunds' notifications.
    configs="sequential concurrent last_attempt"
    if [ "$pml" = operations.pml ]; then
      configs=refunds
      printf '%s\n' "$@" | grep -qx -- -DEVENTS && configs=refund_notifications
    fi
    for config in $configs; do
      case $config in
        refunds|refund_notifications) switches=("$@") ;;
        sequential) switches=(-DW1RUNS=2 -DW2RUNS=1 -DW3RUNS=0 "$@") ;;
        concurrent) switches=(-DW1RUNS=1 -DW2RUNS=1 -DW3RUNS=1 -DNO_WEBHOOKS "$@") ;;
        last_attempt) switches=(-DW1RUNS=2 -DW2RUNS=1 -DW3RUNS=0 -DMAXATT=1 -DNO_WEBHOOKS "$@") ;;
      esac
      verify "$config" "${switches[@]}"
      if [ "$(errors_of $config)" != 0 ]; then
        echo "FAIL: the model does not hold for profile $profile ($config):" >&2
        story "${switches[@]}" >&2
        status=1
      fi
      exhausted "$config" || status=1
      # (One attempt per run never backs off: the markers are the two full worlds'.)
      [ $config = last_attempt ] && continue
      missed=$(unreached_markers "$config" "${switches[@]}")
      if [ -n "$missed" ]; then
        echo "FAIL: the $config search never reached:" >&2
        echo "$missed" >&2
        status=1
      fi
    done
    exit $status
    ;;
  revert|reverted)
    fix=$1 harm=$2
    shift 2   # what is left: switches the harm needs (-DMAXATT=1)
    case $harm in
      double_charge) only=-DONLY_DOUBLE_CHARGE; text='charges<=1' ;;
      failed_but_charged) only=-DONLY_FAILED_BUT_CHARGED; text='failed_reported' ;;
      foreign_id_taken) only=-DONLY_FOREIGN_ID; text='row_id!=' ;;
      shipped_unpaid) only=-DONLY_SHIPPED_UNPAID; text='(p_state==CHARGED|ev_for)' ;;
      money_failed_but_charged) only=-DONLY_MONEY_FAILED_BUT_CHARGED; text='p_state!=CHARGED' ;;
      money_moved_back) only=-DONLY_MONEY_MOVED_BACK; text='m_old' ;;
      over_refund) only=-DONLY_OVER_REFUND; text='refunded<=captured' ;;
      second_movement) only=-DONLY_SECOND_MOVEMENT; text='moved\[0\]<=1' ;;
      unsettled_parent) only=-DONLY_UNSETTLED_PARENT; text='captured>0' ;;
      ledger_spent) only=-DONLY_LEDGER_SPENT; text='st\[0\]==1' ;;
      succeeded_unmoved) only=-DONLY_SUCCEEDED_UNMOVED; text='kst\[key\[[01]\]\]==1' ;;
      failed_but_moved) only=-DONLY_FAILED_BUT_MOVED; text='kst\[key\[[01]\]\]!=1' ;;
      event_elsewhere) only=-DONLY_EVENT_ELSEWHERE; text='key\[t\]==' ;;
      *) echo "unknown harm $harm" >&2; exit 2 ;;
    esac
    search=bfs   # the shortest story
    if [ "$mode" = revert ]; then
      switches=(-DREVERT_FIX$fix -DDAMAGE_ONLY $only -DBFS_SEARCH "$@") name=revert$fix what="fix $fix"
    else
      switches=(-DDAMAGE_ONLY $only -DBFS_SEARCH "$@") name=reverted what="the $fix (in the code)"
    fi
    verify "$name" "${switches[@]}"
    n=$(errors_of "$name")
    if [ -z "$n" ] || [ "$n" -lt 1 ]; then
      echo "FAIL: with $what reverted, SPIN found no $harm for profile $profile" >&2
      cat "$name.out" >&2
      exit 1
    fi
    trail=$(story "${switches[@]}")
    echo "$trail"
    if ! grep -qE "text of failed assertion.*$text" <<< "$trail"; then
      echo "FAIL: the error found is not a $harm" >&2
      exit 1
    fi
    ;;
  check)
    if [ "$search" = bfs ]; then set -- "$@" -DBFS_SEARCH; fi
    verify check "$@"
    cat check.out
    if [ "$(errors_of check)" != 0 ]; then story "$@"; fi
    ;;
  *)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac
