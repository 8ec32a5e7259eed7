/*
 * leaky_cache: a tiny request handler with a response cache, and one leak.
 *
 * Every request body is read into a 512-byte buffer. Well-formed requests get a response that is
 * cached (replacing, and freeing, whatever held the slot before) and their body is freed. Every
 * tenth request is malformed, and that early-return path forgets to free the body: with the
 * default 1000 requests, read_request_body ends up with 100 live blocks, 51200 bytes.
 *
 * Usage: leaky_cache [REQUESTS] [--wait-enter]
 * After serving the requests it prints a "ready" line and waits, so it can be inspected live:
 * until Enter with --wait-enter, otherwise until SIGINT or SIGTERM. Either way it then exits
 * normally.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { BODY_SIZE = 512, CACHE_SLOTS = 64 };

static char* cache[CACHE_SLOTS];

static char* read_request_body(int request_id) {
    char* body = malloc(BODY_SIZE);
    if (body == NULL) abort();
    snprintf(body, BODY_SIZE, "GET /items/%d%s", request_id, request_id % 10 == 9 ? " \x01" : "");
    return body;
}

static int is_well_formed(const char* body) {
    return strchr(body, '\x01') == NULL;
}

static char* render_response(const char* body) {
    char* response = NULL;
    if (asprintf(&response, "200 OK for <%s>", body) < 0) abort();
    return response;
}

static void cache_store(int request_id, char* response) {
    char** slot = &cache[request_id % CACHE_SLOTS];
    free(*slot);
    *slot = response;
}

/* Returns 0 if the request was served, -1 if it was rejected. */
static int handle_request(int request_id) {
    char* body = read_request_body(request_id);
    if (!is_well_formed(body)) {
        return -1; /* the bug: body is never freed on this path */
    }
    cache_store(request_id, render_response(body));
    free(body);
    return 0;
}

static volatile sig_atomic_t stop_requested;

static void request_stop(int signal_number) {
    (void)signal_number;
    stop_requested = 1;
}

static void wait_for_signal(void) {
    sigset_t blocked, previous;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGINT);
    sigaddset(&blocked, SIGTERM);
    /* Block first so a signal that arrives before sigsuspend cannot be missed. */
    sigprocmask(SIG_BLOCK, &blocked, &previous);
    struct sigaction action = {.sa_handler = request_stop};
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    while (!stop_requested) sigsuspend(&previous);
}

int main(int argc, char** argv) {
    int requests = 1000;
    int wait_for_enter = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--wait-enter") == 0) {
            wait_for_enter = 1;
        } else if ((requests = atoi(argv[i])) <= 0) {
            fprintf(stderr, "usage: %s [REQUESTS] [--wait-enter]\n", argv[0]);
            return 2;
        }
    }

    int rejected = 0;
    for (int id = 0; id < requests; ++id) rejected += handle_request(id) != 0;

    printf("leaky_cache: served %d requests (%d rejected); pid %d ready, waiting for %s\n", requests,
           rejected, (int)getpid(), wait_for_enter ? "Enter" : "SIGINT/SIGTERM");
    fflush(stdout);
    if (wait_for_enter) {
        char line[16];
        (void)!fgets(line, sizeof line, stdin);
    } else {
        wait_for_signal();
    }

    for (int slot = 0; slot < CACHE_SLOTS; ++slot) free(cache[slot]);
    return 0;
}
