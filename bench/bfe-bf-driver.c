/* Times bfe-bf (the C library of Derler et al.'s group, on relic) the way
 * crates/tlslab-bfe/examples/bfe-bench.rs times tlslab-bfe: key generation, encapsulation,
 * decapsulation (bfe-bf's has the Fujisaki-Okamoto check) and puncturing, each as the median
 * of the process's CPU time (bfe-bf spreads the k pairings of an encapsulation, and of the
 * check, over OpenMP threads: CPU time counts them all) and of wall time, plus the secret
 * key's encoded size and how much the resident set grew with it. Built and run by
 * bench/bfe.sh.
 *
 *   bfe-bf-driver N P ITERATIONS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bfe-bf.h>
#include <omp.h>

static double seconds(clockid_t clock) {
  struct timespec time;
  clock_gettime(clock, &time);
  return time.tv_sec + time.tv_nsec / 1e9;
}

static long resident_kilobytes(void) {
  FILE* status = fopen("/proc/self/status", "r");
  char line[256];
  long kilobytes = 0;
  while (status && fgets(line, sizeof(line), status)) {
    if (strncmp(line, "VmRSS:", 6) == 0) {
      kilobytes = strtol(line + 6, NULL, 10);
    }
  }
  if (status) {
    fclose(status);
  }
  return kilobytes;
}

static int compare(const void* left, const void* right) {
  double a = *(const double*)left, b = *(const double*)right;
  return (a > b) - (a < b);
}

static double at(double* values, int count, double share) {
  qsort(values, count, sizeof(double), compare);
  return values[(int)((count - 1) * share + 0.5)];
}

static void report(const char* what, double* cpu, double* wall, int count) {
  double median = at(cpu, count, 0.5), low = at(cpu, count, 0.1), high = at(cpu, count, 0.9);
  printf("%s: median %.1f µs CPU (p10 %.1f, p90 %.1f), wall median %.1f µs; %d runs\n", what,
         median * 1e6, low * 1e6, high * 1e6, at(wall, count, 0.5) * 1e6, count);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: bfe-bf-driver N P ITERATIONS\n");
    return 2;
  }
  unsigned int capacity = strtoul(argv[1], NULL, 10);
  double rate = strtod(argv[2], NULL);
  int iterations = atoi(argv[3]);
  if (iterations < 1) {
    fprintf(stderr, "error: ITERATIONS must be at least 1\n");
    return 2;
  }

  bfe_bf_public_key_t public_key;
  bfe_bf_secret_key_t secret_key;
  bfe_bf_init_public_key(&public_key);
  bfe_bf_init_secret_key(&secret_key);
  long resident_before = resident_kilobytes();
  double cpu = seconds(CLOCK_PROCESS_CPUTIME_ID), wall = seconds(CLOCK_MONOTONIC);
  if (bfe_bf_keygen(&public_key, &secret_key, 32, capacity, rate) != 0) {
    fprintf(stderr, "error: bfe_bf_keygen failed\n");
    return 1;
  }
  cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
  wall = seconds(CLOCK_MONOTONIC) - wall;
  long resident_after = resident_kilobytes();
  unsigned int parts = public_key.filter_size;
  bfe_bf_ciphertext_t sized;
  bfe_bf_init_ciphertext(&sized, &public_key);
  printf("n = %u, p = %g: m = %u key parts, k = %u hashes; public key %u B, ciphertext %u B, "
         "secret key %u B encoded\n",
         capacity, rate, parts, public_key.filter_hash_count, bfe_bf_public_key_size(),
         bfe_bf_ciphertext_size(&sized), bfe_bf_secret_key_size(&secret_key));
  bfe_bf_clear_ciphertext(&sized);
  printf("keygen, whole key: %.2f s wall, %.2f s CPU (%.1f µs CPU per key part)\n", wall, cpu,
         cpu / parts * 1e6);
  printf("secret key memory: the resident set grew by %.1f MB\n",
         (resident_after - resident_before) * 1024 / 1e6);

  /* The operations with OpenMP's default threads (as bfe-bf ships), then on one thread: the
   * CPU time of the first also counts OpenMP's workers spinning while they wait. */
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      omp_set_num_threads(1);
    }
    const char* threads = round == 0 ? "OpenMP default threads" : "1 thread";
    double* encaps_cpu = calloc(iterations, sizeof(double));
    double* encaps_wall = calloc(iterations, sizeof(double));
    double* decaps_cpu = calloc(iterations, sizeof(double));
    double* decaps_wall = calloc(iterations, sizeof(double));
    double* puncture_cpu = calloc(iterations, sizeof(double));
    double* puncture_wall = calloc(iterations, sizeof(double));
    for (int i = 0; i < iterations; ++i) {
      bfe_bf_ciphertext_t ciphertext;
      uint8_t key[32], opened[32];
      bfe_bf_init_ciphertext(&ciphertext, &public_key);

      cpu = seconds(CLOCK_PROCESS_CPUTIME_ID), wall = seconds(CLOCK_MONOTONIC);
      int status = bfe_bf_encaps(&ciphertext, key, &public_key);
      encaps_cpu[i] = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
      encaps_wall[i] = seconds(CLOCK_MONOTONIC) - wall;

      cpu = seconds(CLOCK_PROCESS_CPUTIME_ID), wall = seconds(CLOCK_MONOTONIC);
      status |= bfe_bf_decaps(opened, &public_key, &secret_key, &ciphertext);
      decaps_cpu[i] = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
      decaps_wall[i] = seconds(CLOCK_MONOTONIC) - wall;
      if (status != 0 || memcmp(key, opened, sizeof(key)) != 0) {
        fprintf(stderr, "error: decapsulation failed (%d)\n", status);
        return 1;
      }

      cpu = seconds(CLOCK_PROCESS_CPUTIME_ID), wall = seconds(CLOCK_MONOTONIC);
      bfe_bf_puncture(&secret_key, &ciphertext);
      puncture_cpu[i] = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
      puncture_wall[i] = seconds(CLOCK_MONOTONIC) - wall;
      bfe_bf_clear_ciphertext(&ciphertext);
    }
    printf("[%s]\n", threads);
    report("encapsulation (FO)", encaps_cpu, encaps_wall, iterations);
    report("decapsulation (FO check)", decaps_cpu, decaps_wall, iterations);
    report("puncture", puncture_cpu, puncture_wall, iterations);
    free(encaps_cpu), free(encaps_wall), free(decaps_cpu), free(decaps_wall);
    free(puncture_cpu), free(puncture_wall);
  }
  bfe_bf_clear_secret_key(&secret_key);
  bfe_bf_clear_public_key(&public_key);
  return 0;
}
