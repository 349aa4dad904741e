/* cli.h - start-up steps shared by dlq-worker and dlqctl. */
#ifndef DLQ_CLI_H
#define DLQ_CLI_H

#include "config.h"
#include "topology.h"

/* Loads the configuration (`path` NULL: embedded defaults + env) and the
 * topology it names. Problems go to stderr, one per line. Returns 0, or
 * -1 with nothing left to release. */
int	dlq_cli_load(const char *path, struct dlq_config *,
	    struct dlq_topology **);

struct option;

/* After getopt_long() (with opterr 0) returned '?' for argv[optind - 1]:
 * says on stderr, after "prog: ", what was wrong with that option, with
 * the long option most likely meant for one it does not know. */
void	dlq_cli_bad_option(const char *prog, char *const *argv,
	    const struct option *longopts);

/* What dlq_cli_getopt() returns for an abbreviated long option, after
 * saying so on stderr. */
#define DLQ_CLI_ABBREVIATED	'\001'

/* getopt_long() that takes a long option by its whole name only: glibc
 * takes any unique prefix, and "--exec" or "--y" must not run a replay
 * or confirm a drop nobody typed. For an abbreviation it says on stderr
 * "WHO: unknown option '--exec'; did you mean '--execute'?" and returns
 * DLQ_CLI_ABBREVIATED; otherwise what getopt_long() returns. */
int	dlq_cli_getopt(int argc, char *const *argv, const char *shortopts,
	    const struct option *longopts, const char *who);

#define DLQ_VERSION	"0.1.0"

#endif
