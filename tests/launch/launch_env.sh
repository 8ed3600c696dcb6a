# Sourced by the launch tests: unsets every launcher's variable the test's environment
# may hold (scrun's, torchrun's, Open MPI's, Slurm's), keeping SC_MASTER_PORT, the port
# with_reserved_port.py holds for the test, and defines wait_for.
for v in $(compgen -e); do
  case $v in
  SC_MASTER_PORT) ;;
  SC_* | RANK | WORLD_SIZE | LOCAL_RANK | LOCAL_WORLD_SIZE | MASTER_* | OMPI_COMM_WORLD_* | \
  PMI_* | MPI_LOCAL* | SLURM_*) unset "$v" ;;
  esac
done

# wait_for SECONDS COMMAND...: until COMMAND succeeds, at most SECONDS.
wait_for() {
  local until=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < until)) || return 1
    sleep 0.05
  done
}
