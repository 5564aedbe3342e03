/* Ping-pong in C, the reference for `tachyflow bench pingpong`: same sizes, iteration
 * counts and repetitions as tachyflow's Python ping-pong, read from a plan file with one
 * "size iterations" pair per line. Rank 0 prints "size one_way_seconds" per sample.
 * Built with the MPI runtime's own mpicc when the benchmark runs. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: pingpong PLAN_FILE REPEATS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int repeats = atoi(argv[2]);
    FILE *plan = fopen(argv[1], "r");
    if (!plan) MPI_Abort(MPI_COMM_WORLD, 2);
    long size, iterations;
    char *buffer = NULL;
    long capacity = 0;
    while (fscanf(plan, "%ld %ld", &size, &iterations) == 2) {
        if (size > capacity) {
            free(buffer);
            buffer = malloc(size);
            memset(buffer, 1, size);  /* touch every page before timing */
            capacity = size;
        }
        for (int sample = -1; sample < repeats; sample++) {  /* sample -1: warm-up */
            long loops = sample < 0 ? iterations / 10 + 1 : iterations;
            MPI_Barrier(MPI_COMM_WORLD);
            double start = MPI_Wtime();
            for (long i = 0; i < loops; i++) {
                if (rank == 0) {
                    MPI_Send(buffer, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(buffer, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(buffer, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buffer, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                }
            }
            double elapsed = MPI_Wtime() - start;
            if (rank == 0 && sample >= 0) printf("%ld %.9e\n", size, elapsed / loops / 2.0);
        }
    }
    fclose(plan);
    free(buffer);
    MPI_Finalize();
    return 0;
}
