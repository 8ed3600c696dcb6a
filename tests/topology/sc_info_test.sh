#!/usr/bin/env bash
# sc-info behaviour tests. Usage: sc_info_test.sh SC_INFO TEST_NAME
set -u
sc_info=$1
name=$2
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

# Only the variables a test sets: ctest may run inside a launcher's environment.
for v in SC_RANK RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID \
         SC_WORLD_SIZE WORLD_SIZE OMPI_COMM_WORLD_SIZE PMI_SIZE SLURM_STEP_NUM_TASKS SLURM_NTASKS \
         SC_LOCAL_RANK LOCAL_RANK OMPI_COMM_WORLD_LOCAL_RANK SLURM_LOCALID \
         SC_LOCAL_SIZE LOCAL_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_SIZE SLURM_STEP_TASKS_PER_NODE \
         SC_MASTER_ADDR MASTER_ADDR SC_MASTER_PORT MASTER_PORT SC_BIND SC_LOG_LEVEL \
         SC_ALGO SC_RING_THRESHOLD SC_CHUNK_BYTES SC_PROGRESS_SPIN_US SC_LOCAL_REGISTER \
         SC_CPU_ISA SC_THREADS SC_LAUNCH_ID TORCHELASTIC_RUN_ID PMIX_NAMESPACE \
         OMPI_MCA_orte_ess_jobid OMPI_MCA_ess_base_jobid SLURM_JOB_ID SLURM_STEP_ID; do
    unset "$v"
done

fail() {
    echo "FAIL: $*"
    echo "--- stdout"; cat "$out"
    echo "--- stderr"; cat "$err"
    exit 1
}

case $name in
topology_and_config_are_printed_and_exit_zero)
    RANK=3 WORLD_SIZE=4 "$sc_info" --topology --config >"$out" 2>"$err" || fail "exit status $?"
    grep -q '^  bound to: *PUs ' "$out" || fail "no binding line"
    grep -Eq '^  SC_RANK +=  *3 +RANK( |$)' "$out" || fail "SC_RANK is not 3 from RANK"
    ;;
launch_id_and_where_it_came_from_are_printed)
    # Which launch the store takes this rank for (SC_LAUNCH_ID, else the launcher's id),
    # where it came from; it was not printed at all.
    "$sc_info" --config >"$out" 2>"$err" || fail "exit status $?"
    grep -Eq '^  SC_LAUNCH_ID +=  *none +default: nothing checked' "$out" ||
        fail "no launch id is not printed as none"
    RANK=0 WORLD_SIZE=1 TORCHELASTIC_RUN_ID=run-7 "$sc_info" --config >"$out" 2>"$err" ||
        fail "exit status $?"
    grep -Eq "^  SC_LAUNCH_ID +=  *run-7 +TORCHELASTIC_RUN_ID, the launcher's id .*launched by torchrun\)$" \
        "$out" || fail "torchrun's run id is not printed as the launch id"
    SC_LAUNCH_ID=job-42 RANK=0 WORLD_SIZE=1 TORCHELASTIC_RUN_ID=run-7 "$sc_info" --config \
        >"$out" 2>"$err" || fail "exit status $?"
    grep -Eq '^  SC_LAUNCH_ID +=  *job-42 +SC_LAUNCH_ID \(reads' "$out" ||
        fail "SC_LAUNCH_ID does not come before the launcher's id"
    SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_JOB_ID=77 SLURM_STEP_ID=3 "$sc_info" --config \
        >"$out" 2>"$err" || fail "exit status $?"
    grep -Eq "^  SC_LAUNCH_ID +=  *77\.3 +SLURM_JOB_ID\.SLURM_STEP_ID, the launcher's id" "$out" ||
        fail "Slurm's job and step are not printed as the launch id"
    ;;
invalid_setting_exits_nonzero_naming_it)
    SC_BIND=bogus "$sc_info" --config >"$out" 2>"$err" && fail "exit status 0"
    grep -q 'SC_BIND=bogus' "$err" || fail "the error does not name SC_BIND=bogus"
    # A world larger than sc_comm_init takes (65536 ranks) was printed as valid.
    SC_WORLD_SIZE=65537 SC_RANK=0 "$sc_info" --config >"$out" 2>"$err" &&
        fail "SC_WORLD_SIZE=65537: exit status 0"
    grep -q 'SC_WORLD_SIZE=65537 is above the maximum, 65536' "$err" ||
        fail "SC_WORLD_SIZE=65537: $(cat "$err")"
    SC_WORLD_SIZE=65536 SC_RANK=0 "$sc_info" --config >"$out" 2>"$err" ||
        fail "SC_WORLD_SIZE=65536: $(cat "$err")"
    ;;
unknown_option_exits_2_with_usage)
    "$sc_info" --bogus >"$out" 2>"$err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "exit status $rc, expected 2"
    grep -q "unknown option '--bogus'" "$err" || fail "no error naming the option"
    grep -q '^usage: sc-info' "$err" || fail "no usage"
    ;;
transports_alone_use_a_communicator_of_one_rank)
    SC_TIMEOUT=10 "$sc_info" --transports >"$out" 2>"$err" || fail "exit status $?"
    [ -s "$out" ] || fail "nothing printed"
    ;;
transports_alone_take_no_port_after_master_port_65535)
    # A world of one opens no port, so none need follow torch's MASTER_PORT: it failed
    # with "no port follows it". A world of two still needs one.
    MASTER_PORT=65535 SC_TIMEOUT=10 "$sc_info" --transports >"$out" 2>"$err" ||
        fail "exit status $?"
    MASTER_PORT=65535 RANK=0 WORLD_SIZE=2 "$sc_info" --config >"$out" 2>"$err" &&
        fail "a world of 2: exit status 0"
    grep -q 'MASTER_PORT=65535 is torch.distributed.s store and no port follows it' "$err" ||
        fail "a world of 2: $(cat "$err")"
    ;;
stdout_that_cannot_be_written_exits_1)
    # Every report lost on a full device was an exit status of 0.
    for args in "" --config --version; do
        # shellcheck disable=SC2086
        SC_TIMEOUT=10 "$sc_info" $args >/dev/full 2>"$err"
        rc=$?
        [ "$rc" -eq 1 ] || fail "sc-info $args: exit status $rc, expected 1"
        grep -q '^sc-info: cannot write stdout: No space left on device$' "$err" ||
            fail "sc-info $args: $(cat "$err")"
    done
    ;;
auto_settings_say_what_they_decide_here)
    # SC_THREADS and SC_CPU_ISA unset showed 'auto' and how it is decided, not what it
    # decided: the CPUs of the binding (taskset), the widest path /proc/cpuinfo lists.
    flags=$(grep -m1 '^flags' /proc/cpuinfo)
    isa=scalar
    if [[ " $flags " == *" avx512f "* && " $flags " == *" avx512bw "* &&
          " $flags " == *" avx512vl "* && " $flags " == *" avx2 "* &&
          " $flags " == *" bmi2 "* ]]; then
        isa=avx512
    elif [[ " $flags " == *" avx2 "* && " $flags " == *" bmi2 "* ]]; then
        isa=avx2
    fi
    taskset -c 0 "$sc_info" --config >"$out" 2>"$err" || fail "exit status $?"
    grep -Eq '^  SC_THREADS +=  *auto +default: the CPUs this process is bound to, here 1$' "$out" ||
        fail "SC_THREADS bound to one CPU does not say 1"
    grep -Eq "^  SC_CPU_ISA +=  *auto +default: the widest vector path this CPU has, here $isa\$" "$out" ||
        fail "SC_CPU_ISA does not say $isa"
    if [ "$(nproc --all)" -ge 2 ]; then
        taskset -c 0,1 "$sc_info" --config >"$out" 2>"$err" || fail "exit status $?"
        grep -Eq '^  SC_THREADS +=  *auto +default: the CPUs this process is bound to, here 2$' "$out" ||
            fail "SC_THREADS bound to two CPUs does not say 2"
    fi
    SC_THREADS=3 "$sc_info" --config >"$out" 2>"$err" || fail "exit status $?"
    grep -Eq '^  SC_THREADS +=  *3 +SC_THREADS$' "$out" || fail "SC_THREADS=3 is not shown as set"
    ;;
vector_path_this_cpu_lacks_is_invalid)
    # Valgrind runs the program on a CPU without AVX-512 (its CPUID says so), as the
    # library's own check sees it; sc-info called such a setting valid, and the
    # kernels then refused it.
    command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed"; exit 77; }
    SC_CPU_ISA=avx2 valgrind -q "$sc_info" --config >"$out" 2>"$err" ||
        fail "SC_CPU_ISA=avx2: exit status $?"
    SC_CPU_ISA=AVX512 valgrind -q "$sc_info" --config >"$out" 2>"$err" && fail "exit status 0"
    grep -Eq '^  SC_CPU_ISA +=  *AVX512 +INVALID: SC_CPU_ISA=AVX512 asks for a vector path this CPU lacks \(it has avx2\)$' "$out" ||
        fail "no INVALID line for the missing vector path"
    ;;
*)
    echo "unknown test $name"
    exit 1
    ;;
esac
echo "PASS: $name"
