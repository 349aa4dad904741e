/* dlqctl - the operator's command line for dlq-monitor.
 * A table of commands, each short, each calling into internal/. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "alert.h"
#include "buf.h"
#include "cli.h"
#include "config.h"
#include "log.h"
#include "topology.h"
#include "worker.h"

struct ctx {
	struct dlq_config	 cfg;
	struct dlq_topology	*top;
	bool			 json;
};

struct cmd {
	const char	*name;
	int		(*run)(struct ctx *, int, char **);
	const char	*usage;
};

static int
cmd_topology_show(struct ctx *x, int argc, char **argv)
{
	const struct dlq_queue *q;
	struct dlq_buf b;
	size_t i;

	(void)argv;
	if (argc != 0)
		return DLQ_EXIT_USAGE;
	if (!x->json) {
		for (i = 0; i < x->top->n_queues; i++)
			if (x->top->queues[i].monitored)
				puts(x->top->queues[i].dlq_name);
		return DLQ_EXIT_OK;
	}
	dlq_buf_init(&b);
	dlq_buf_adds(&b, "{\"work_exchange\":");
	dlq_buf_json_cstr(&b, x->top->work_exchange);
	dlq_buf_adds(&b, ",\"dead_letter_exchange\":");
	dlq_buf_json_cstr(&b, x->top->dead_letter_exchange);
	dlq_buf_adds(&b, ",\"dlq_suffix\":");
	dlq_buf_json_cstr(&b, x->top->dlq_suffix);
	dlq_buf_adds(&b, ",\"queues\":[");
	for (i = 0; i < x->top->n_queues; i++) {
		q = &x->top->queues[i];
		dlq_buf_adds(&b, i ? ",{\"name\":" : "{\"name\":");
		dlq_buf_json_cstr(&b, q->name);
		dlq_buf_adds(&b, ",\"dlq\":");
		dlq_buf_json_cstr(&b, q->dlq_name);
		dlq_buf_adds(&b, ",\"retry\":");
		dlq_buf_json_cstr(&b, q->retry_name);
		dlq_buf_printf(&b, ",\"type\":\"%s\",\"retry_delay_ms\":%lld,"
		    "\"max_retries\":%lld,\"delivery_limit\":%lld,"
		    "\"monitored\":%s}",
		    q->type == DLQ_QUEUE_QUORUM ? "quorum" : "classic",
		    (long long)q->retry_delay_ms, (long long)q->max_retries,
		    (long long)q->delivery_limit,
		    q->monitored ? "true" : "false");
	}
	dlq_buf_adds(&b, "]}\n");
	fputs(b.data, stdout);
	dlq_buf_release(&b);
	return DLQ_EXIT_OK;
}

static int
cmd_topology_assert(struct ctx *x, int argc, char **argv)
{
	struct dlq_assert_result res;
	char why[512];

	(void)argv;
	if (argc != 0)
		return DLQ_EXIT_USAGE;
	if (dlq_topology_apply(&x->cfg, x->top, &res, why, sizeof(why)) !=
	    DLQ_AMQP_OK) {
		fprintf(stderr, "dlqctl: %s\n", why);
		return DLQ_EXIT_ERROR;
	}
	if (x->json)
		printf("{\"declared\":%u,\"conflicts\":%u,\"errors\":%u}\n",
		    res.declared, res.conflicts, res.errors);
	else
		printf("topology asserted: %zu queues (%zu monitored), "
		    "%u declarations, %u conflicts, %u errors\n",
		    x->top->n_queues, dlq_topology_monitored(x->top),
		    res.declared, res.conflicts, res.errors);
	return res.conflicts || res.errors ? DLQ_EXIT_CONFLICT : DLQ_EXIT_OK;
}

static int
cmd_test_alert(struct ctx *x, int argc, char **argv)
{
	int failed;

	(void)argv;
	if (argc != 0)
		return DLQ_EXIT_USAGE;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return DLQ_EXIT_ERROR;
	failed = dlq_alert_test(&x->cfg, stdout);
	curl_global_cleanup();
	return failed ? DLQ_EXIT_ERROR : DLQ_EXIT_OK;
}

static const struct cmd cmds[] = {
	{ "topology show", cmd_topology_show,
	    "topology show [--json]      list the monitored DLQs" },
	{ "topology assert", cmd_topology_assert,
	    "topology assert             declare exchanges, queues, bindings" },
	{ "test-alert", cmd_test_alert,
	    "test-alert                  send a test digest to every webhook" },
};

#define NCMDS	(sizeof(cmds) / sizeof(cmds[0]))

static void
usage(FILE *f)
{
	size_t i;

	fputs("usage: dlqctl [-c FILE] [--json] COMMAND [ARGS]\n", f);
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

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd *cmd;
	const char *path = NULL;
	struct ctx x = { .json = false };
	int ch, used = 0, rc;

	/* "+": options after the command belong to the command */
	while ((ch = getopt_long(argc, argv, "+c:hV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': path = optarg; break;
		case 'j': x.json = true; break;
		case 'h': usage(stdout); return DLQ_EXIT_OK;
		case 'V': puts("dlqctl " DLQ_VERSION); return DLQ_EXIT_OK;
		default: usage(stderr); return DLQ_EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	/* --json is also accepted after the command */
	for (ch = 0; ch < argc; ch++)
		if (strcmp(argv[ch], "--json") == 0) {
			x.json = true;
			memmove(&argv[ch], &argv[ch + 1],
			    (size_t)(argc - ch - 1) * sizeof(*argv));
			argc--;
			ch--;
		}
	if ((cmd = lookup(argc, argv, &used)) == NULL) {
		if (argc > 0)
			fprintf(stderr, "dlqctl: unknown command '%s'\n", argv[0]);
		usage(stderr);
		return DLQ_EXIT_USAGE;
	}
	dlq_log_set_fd(2);
	if (dlq_cli_load(path, &x.cfg, &x.top) == -1)
		return DLQ_EXIT_ERROR;
	/* a command line prints results, not the daemon's info events */
	if (x.cfg.log_level < DLQ_LOG_WARN)
		dlq_log_set_level(DLQ_LOG_WARN);
	rc = cmd->run(&x, argc - used, argv + used);
	if (rc == DLQ_EXIT_USAGE)
		fprintf(stderr, "usage: dlqctl %s\n", cmd->usage);
	dlq_topology_free(x.top);
	dlq_config_release(&x.cfg);
	return rc;
}
