/* dlqctl - the operator's command line for dlq-monitor.
 * The table of commands, global options, help and dispatch; the commands
 * are in broker.c, triage.c and replay.c, each calling into internal/. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "ctlargs.h"
#include "ctlclient.h"
#include "ctlhelp.h"
#include "log.h"
#include "suggest.h"
#include "topology.h"
#include "proto.h"

#include "dlqctl.h"

struct cmd {
	const char	*name;
	int		(*run)(struct dlqctl *, int, char **);
	const char	*usage;
};

/* The records of a queue or of a failure signature (which names its
 * queue), narrowed by class and age; `more`: options of either. */
#define SELECTION(more)	"--queue Q [--signature SIG] [--class C] "	\
	"[--since DUR]" more " | --signature SIG [--class C] [--since DUR]" more

static const struct cmd cmds[] = {
	{ "list", cmd_list, "list [--queue Q] [--status S] [--class C] "
	    "[--message-id ID] [--correlation-id ID] [--owner NAME] "
	    "[--signature SIG] [--since DUR] [--limit N] [--before ID]" },
	{ "show", cmd_show, "show ID [--payload]" },
	{ "stats", cmd_stats, "stats" },
	{ "groups", cmd_groups, "groups [--queue Q] [--class C] "
	    "[--since DUR] [--limit N] [--by-cause]" },
	{ "assign", cmd_assign, "assign (ID... | " SELECTION(" [--limit N]") ") "
	    "--owner NAME --decision TEXT [--escalate-in DUR] "
	    "[--evidence TEXT] [--yes]" },
	{ "drop", cmd_drop, "drop (ID... | " SELECTION(" [--limit N]") ") "
	    "--reason TEXT [--yes]" },
	{ "reopen", cmd_reopen, "reopen (ID... | " SELECTION(" [--limit N]") ") "
	    "--reason TEXT [--yes]" },
	{ "purge", cmd_purge, "purge --older-than DUR [--yes]" },
	{ "replay", cmd_replay, "replay (ID... | " SELECTION("") " | "
	    "--from-queue Q) [--limit N] "
	    "[--rate R] [--reason TEXT] [--evidence TEXT] [--to-exchange X "
	    "--routing-key K] [--reset-retries] [--force] [--canary K --watch "
	    "DUR] [--execute]" },
	{ "redrive status", cmd_redrive_status, "redrive status" },
	{ "redrive resume", cmd_redrive_resume, "redrive resume QUEUE "
	    "--reason TEXT" },
	{ "audit", cmd_audit, "audit [--since DUR] [--actor USER] "
	    "[--command CMD] [--limit N] [--before ID]" },
	{ "topology show", cmd_topology_show, "topology show" },
	{ "topology assert", cmd_topology_assert, "topology assert" },
	{ "test-alert", cmd_test_alert, "test-alert" },
	{ "console token", cmd_console_token, "console token NAME ROLE" },
	{ "inject", cmd_inject, "inject --queue Q [--count N] [--error TEXT] "
	    "[--retries K]" },
};

#define NCMDS	(sizeof(cmds) / sizeof(cmds[0]))

static void
usage(FILE *f)
{
	size_t i;

	fputs("usage: dlqctl [-c FILE] [--json] [--timeout DUR] COMMAND "
	    "[ARGS]\n"
	    "       dlqctl help [COMMAND]   (or COMMAND --help)\n"
	    "DUR is a number with a unit: 500ms, 90s, 15m, 2h, 7d, 1w\n", f);
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  dlqctl %s\n", cmds[i].usage);
}

/* Finds the command whose words start argv; *used = words consumed. */
static const struct cmd *
lookup(int argc, char **argv, int *used)
{
	char name[64];
	size_t i;

	for (i = 0; i < NCMDS; i++) {
		if (argc >= 2) {
			snprintf(name, sizeof(name), "%s %s", argv[0], argv[1]);
			if (strcmp(name, cmds[i].name) == 0) {
				*used = 2;
				return &cmds[i];
			}
		}
		if (argc >= 1 && strcmp(argv[0], cmds[i].name) == 0) {
			*used = 1;
			return &cmds[i];
		}
	}
	return NULL;
}

/* Whether a command of two words ("topology show") begins with word. */
static bool
in_group(const struct cmd *c, const char *word)
{
	size_t len = strlen(word);

	return strncmp(c->name, word, len) == 0 && c->name[len] == ' ';
}

/* Ends the line that names a mistyped command word with the command
 * nearest to it: among the first words of the commands, or with `group`
 * among its commands' second words. */
static void
suggest_command(const char *group, const char *word)
{
	struct dlq_suggestion s = DLQ_SUGGESTION_NONE;
	const char *name;
	size_t i;

	for (i = 0; i < NCMDS; i++) {
		name = cmds[i].name;
		if (group != NULL) {
			if (!in_group(&cmds[i], group))
				continue;
			name += strlen(group) + 1;
		}
		dlq_suggest_consider(&s, word, name, strcspn(name, " "));
	}
	if (s.word != NULL)
		fprintf(stderr, "; did you mean '%s%s%.*s'?", group ? group : "",
		    group ? " " : "", (int)s.len, s.word);
	fputc('\n', stderr);
}

/* Says what is wrong with a command line lookup() found nothing in: for
 * a group's first word ("topology frob", "redrive"), its subcommands. */
static void
unknown_command(int argc, char **argv)
{
	size_t i, n = 0;

	if (argc == 0) {
		usage(stderr);
		return;
	}
	for (i = 0; i < NCMDS; i++)
		if (in_group(&cmds[i], argv[0]))
			n++;
	if (n == 0) {
		fprintf(stderr, "dlqctl: unknown command '%s'", argv[0]);
		suggest_command(NULL, argv[0]);
		usage(stderr);
		return;
	}
	if (argc > 1) {
		fprintf(stderr, "dlqctl: unknown %s command '%s'", argv[0],
		    argv[1]);
		suggest_command(argv[0], argv[1]);
	} else
		fprintf(stderr, "dlqctl: %s needs a command\n", argv[0]);
	for (i = 0; i < NCMDS; i++)
		if (in_group(&cmds[i], argv[0]))
			fprintf(stderr, "usage: dlqctl %s\n", cmds[i].usage);
}

/* `dlqctl help [COMMAND]` and `dlqctl COMMAND --help` (or -h, `asked`):
 * the usage on stdout, exit 0, without a configuration. Returns -1 when
 * the command line asks for no help. */
static int
help(int argc, char **argv, bool asked)
{
	const struct cmd *cmd;
	int used, n = 0;
	size_t k;

	if (argc > 0 && strcmp(argv[0], "help") == 0) {
		argc--;
		argv++;
		if (argc == 0) {
			usage(stdout);
			return DLQ_EXIT_OK;
		}
		asked = true;
	}
	if (!asked)
		return -1;
	if ((cmd = lookup(argc, argv, &used)) != NULL) {
		printf("usage: dlqctl %s\n", cmd->usage);
		if (dlq_ctl_help(cmd->name) != NULL)
			printf("\n%s", dlq_ctl_help(cmd->name));
		return DLQ_EXIT_OK;
	}
	for (k = 0; argc == 1 && k < NCMDS; k++)	/* "help topology" */
		if (in_group(&cmds[k], argv[0])) {
			printf("usage: dlqctl %s\n", cmds[k].usage);
			n++;
		}
	if (n > 0)
		return DLQ_EXIT_OK;
	unknown_command(argc, argv);
	return DLQ_EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd *cmd;
	const char *path = NULL;
	struct dlqctl x = { .json = false };
	int ch, used = 0, rc;
	int64_t timeout;
	bool asked;

	/* "+": options after the command belong to the command */
	opterr = 0;	/* its messages: ours, with the option meant */
	while ((ch = dlq_cli_getopt(argc, argv, "+c:hV", longopts, "dlqctl")) !=
	    -1) {
		switch (ch) {
		case 'c': path = optarg; break;
		case 'j': x.json = true; break;
		case 't':
			timeout = dlq_parse_duration(optarg);
			if (timeout == DLQ_DURATION_TOO_LONG) {
				fprintf(stderr, "dlqctl: --timeout: too long: "
				    "'%s' (at most 3650d; 0s: no limit)\n",
				    optarg);
				return DLQ_EXIT_USAGE;
			}
			if (timeout < 0) {
				fprintf(stderr, "dlqctl: --timeout: bad "
				    "duration '%s' (e.g. 30s, 10m; 0s: no "
				    "limit)\n", optarg);
				return DLQ_EXIT_USAGE;
			}
			dlq_ctl_set_timeout(timeout);
			break;
		case 'h': usage(stdout); return DLQ_EXIT_OK;
		case 'V': puts("dlqctl " DLQ_VERSION); return DLQ_EXIT_OK;
		case DLQ_CLI_ABBREVIATED:
			usage(stderr);
			return DLQ_EXIT_USAGE;
		default:
			dlq_cli_bad_option("dlqctl", argv, longopts);
			usage(stderr);
			return DLQ_EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	/* --json and --help are also accepted after the command */
	asked = dlq_args_take_global(&argc, argv, &x.json);
	if ((rc = help(argc, argv, asked)) != -1)
		return rc;
	if ((cmd = lookup(argc, argv, &used)) == NULL) {
		unknown_command(argc, argv);
		return DLQ_EXIT_USAGE;
	}
	dlq_log_set_fd(2);
	if (dlq_cli_load(path, &x.cfg, &x.top) == -1) {
		/* the worker's file holds secrets: operators often may not
		 * read it, and the archive commands need only the socket */
		if (path != NULL && access(path, R_OK) == -1 && errno == EACCES)
			fprintf(stderr, "dlqctl: the worker's configuration is "
			    "not readable for you; the archive commands need "
			    "only its socket: leave out -c and set "
			    "DLQ_CONTROL_SOCKET if it is not %s\n",
			    DLQ_CONTROL_SOCKET_DEFAULT);
		return DLQ_EXIT_ERROR;
	}
	/* a command line prints results, not the daemon's info events */
	if (x.cfg.log_level < DLQ_LOG_WARN)
		dlq_log_set_level(DLQ_LOG_WARN);
	/* the command's name ("redrive resume") stands as argv[0] for its
	 * option parser and its messages */
	argv[used - 1] = (char *)cmd->name;
	rc = cmd->run(&x, argc - used + 1, argv + used - 1);
	if (rc == DLQ_CTL_NEEDS_YES)
		rc = DLQ_EXIT_USAGE;
	else if (rc == DLQ_EXIT_USAGE)
		fprintf(stderr, "usage: dlqctl %s\n", cmd->usage);
	dlq_topology_free(x.top);
	dlq_config_release(&x.cfg);
	return rc;
}
