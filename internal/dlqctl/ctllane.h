/* ctllane.h - a lane: one background thread that runs jobs (requests to
 * the worker's control socket) one at a time, in the order they were
 * put, while the caller goes on (replay publishes a chunk while the
 * next is claimed and the last one's outcomes are recorded). A lane
 * without its thread (it could not start) runs each job as it is put. */
#ifndef DLQ_CTLLANE_H
#define DLQ_CTLLANE_H

#include <stdint.h>

struct dlq_lane;

/* A lane with its thread started, which blocks SIGINT, SIGHUP and
 * SIGTERM (they reach the caller's thread). NULL when out of memory. */
struct dlq_lane	*dlq_lane_open(void);

/* Puts fn(arg) at the end of the lane: arg is fn's until the job has
 * run. Returns the job's ticket, for dlq_lane_wait(). */
uint64_t	 dlq_lane_put(struct dlq_lane *, void (*fn)(void *), void *arg);

/* Waits until the job of `ticket`, and so every job put before it, has
 * run. */
void		 dlq_lane_wait(struct dlq_lane *, uint64_t ticket);

/* Waits until every job put has run. */
void		 dlq_lane_drain(struct dlq_lane *);

/* Runs what was put and not yet run, ends the thread, frees the lane. */
void		 dlq_lane_close(struct dlq_lane *);

#endif
