/* dlqctl - what its commands share: the loaded configuration and
 * topology, the answer printer, and each command's entry point
 * (argv[0] is the command's name; returns a DLQ_EXIT_* code). */
#ifndef DLQCTL_H
#define DLQCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "topology.h"
#include "proto.h"

struct dlqctl {
	struct dlq_config	 cfg;
	struct dlq_topology	*top;
	bool			 json;
};

/* Sends `req` (consumed) to the worker; prints the answer's data with
 * `view`, or as JSON with --json. Returns the exit code. */
int	dlqctl_call(struct dlqctl *x, cJSON *req,
	    void (*view)(FILE *, const cJSON *, int64_t));
/* A --queue the topology does not know: a note on stderr (mistyped?). */
void	dlqctl_note_unknown_queue(const struct dlqctl *x, const cJSON *r);
/* Whether `r` selects by --queue or --signature (not by ids). */
bool	dlqctl_selects(const cJSON *r);
/* --class and --since only with --queue or --signature; else says so. */
bool	dlqctl_narrows_a_selection(const cJSON *r);

/* broker.c: without the worker */
int	cmd_topology_show(struct dlqctl *x, int argc, char **argv);
int	cmd_topology_assert(struct dlqctl *x, int argc, char **argv);
int	cmd_test_alert(struct dlqctl *x, int argc, char **argv);
int	cmd_inject(struct dlqctl *x, int argc, char **argv);
int	cmd_console_token(struct dlqctl *x, int argc, char **argv);

/* triage.c: requests to the worker's control socket */
int	cmd_list(struct dlqctl *x, int argc, char **argv);
int	cmd_show(struct dlqctl *x, int argc, char **argv);
int	cmd_stats(struct dlqctl *x, int argc, char **argv);
int	cmd_groups(struct dlqctl *x, int argc, char **argv);
int	cmd_assign(struct dlqctl *x, int argc, char **argv);
int	cmd_drop(struct dlqctl *x, int argc, char **argv);
int	cmd_reopen(struct dlqctl *x, int argc, char **argv);
int	cmd_purge(struct dlqctl *x, int argc, char **argv);
int	cmd_audit(struct dlqctl *x, int argc, char **argv);

/* replay.c */
int	cmd_replay(struct dlqctl *x, int argc, char **argv);
int	cmd_redrive_status(struct dlqctl *x, int argc, char **argv);
int	cmd_redrive_resume(struct dlqctl *x, int argc, char **argv);

#endif
