/* Example: an in-place average of a gradient buffer, overlapped with other work.
 * Run with `scrun -n 4 ./allreduce_overlap`. */
#include <stdio.h>
#include <stdlib.h>

#include <shardcomm/shardcomm.h>

int main(void)
{
    size_t n = 1 << 20;
    sc_comm_t *comm;
    sc_request_t *req;
    float *grad;
    int rank, size, bad = 0;

    if (sc_comm_init_from_env(&comm) != SC_SUCCESS) {
        fprintf(stderr, "allreduce_overlap: sc_comm_init_from_env: %s\n", sc_last_error());
        return 1;
    }
    rank = sc_comm_rank(comm);
    size = sc_comm_size(comm);
    grad = malloc(n * sizeof(float));
    if (!grad)
        return 1;
    for (size_t i = 0; i < n; i++)
        grad[i] = (float)rank;
    if (sc_allreduce(grad, grad, n, SC_FLOAT32, SC_AVG, comm, NULL, &req) != SC_SUCCESS) {
        fprintf(stderr, "allreduce_overlap: %s\n", sc_last_error()); /* names the call */
        return 1;
    }
    /* ... the caller's compute runs here while the progress engine moves data ... */
    if (sc_wait(req) != SC_SUCCESS) {
        fprintf(stderr, "allreduce_overlap: %s\n", sc_last_error()); /* names the call */
        return 1;
    }
    sc_request_free(req);
    for (size_t i = 0; i < n; i++)
        bad += grad[i] != (float)(size - 1) / 2.0f;
    printf("rank %d of %d: average %s\n", rank, size, bad ? "WRONG" : "ok");
    free(grad);
    sc_comm_destroy(comm);
    return bad != 0;
}
