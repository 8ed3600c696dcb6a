# Sourced by the launch tests: unsets every launcher's variable the test's environment
# may hold (scrun's, torchrun's, Open MPI's, Slurm's), keeping SC_MASTER_PORT, the port
# with_reserved_port.py holds for the test.
for v in $(compgen -e); do
  case $v in
  SC_MASTER_PORT) ;;
  SC_* | RANK | WORLD_SIZE | LOCAL_RANK | LOCAL_WORLD_SIZE | MASTER_* | OMPI_COMM_WORLD_* | \
  PMI_* | MPI_LOCAL* | SLURM_*) unset "$v" ;;
  esac
done
