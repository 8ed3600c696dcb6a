/* sc_comm_destroy on one thread while another thread waits (sc_wait) or polls
 * (sc_test) on a request of that communicator: the destroy waits for the request and
 * frees the transport only once the waiting thread is out of it (the waiter used the
 * freed transport's lock and counters: ThreadSanitizer and AddressSanitizer reports,
 * silent heap corruption elsewhere). The last rank joins each round's allreduce late,
 * so that the request is pending when the destroy starts. Run through scrun:
 * test_destroy_while_waiting ROUNDS wait|test [split]: with split the communicator
 * destroyed is a split of the world (the transport stays). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_rank = -1;
#define SC_CHECK_RANK check_rank
#include "../common/sc_check.h"

#define COUNT 4096

static sc_request_t *pending;
static int use_test;
static sc_status_t waited;

static void *waiter(void *arg)
{
    (void)arg;
    if (use_test) {
        while ((waited = sc_test(pending)) == SC_IN_PROGRESS)
            ;
    } else {
        waited = sc_wait(pending);
    }
    return NULL;
}

static int round_once(int split)
{
    sc_comm_t *world, *comm;
    float in[COUNT], out[COUNT];
    pthread_t thread;
    int size;

    CHECK_OK(sc_comm_init_from_env(&world));
    check_rank = sc_comm_rank(world);
    size = sc_comm_size(world);
    comm = world;
    if (split)
        CHECK_OK(sc_comm_split(world, 0, check_rank, &comm));
    for (int i = 0; i < COUNT; i++)
        in[i] = (float)(check_rank + i % 5);
    if (check_rank == size - 1)
        usleep(100000);
    CHECK_OK(sc_allreduce(in, out, COUNT, SC_FLOAT32, SC_SUM, comm, NULL, &pending));
    CHECK(pthread_create(&thread, NULL, waiter, NULL) == 0, "pthread_create failed");
    if (check_rank != size - 1)
        usleep(20000);
    CHECK_OK(sc_comm_destroy(comm));
    CHECK(pthread_join(thread, NULL) == 0, "pthread_join failed");
    CHECK(waited == SC_SUCCESS, "the waiting thread got %s: %s", sc_status_string(waited),
          sc_last_error());
    CHECK_OK(sc_wait(pending));
    sc_request_free(pending);
    for (int i = 0; i < COUNT; i++)
        CHECK(out[i] == (float)(size * (size - 1) / 2 + size * (i % 5)),
              "element %d is %g", i, (double)out[i]);
    if (split)
        CHECK_OK(sc_comm_destroy(world));
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 0;

    if (rounds < 1 || argc < 3 || (strcmp(argv[2], "wait") && strcmp(argv[2], "test"))) {
        fprintf(stderr, "usage: test_destroy_while_waiting ROUNDS wait|test [split]\n");
        return 2;
    }
    use_test = strcmp(argv[2], "test") == 0;
    for (int r = 0; r < rounds; r++)
        if (round_once(argc > 3 && strcmp(argv[3], "split") == 0))
            return 1;
    printf("destroy while waiting: PASS\n");
    return 0;
}
