/* dlqctl's commands on the broker and the webhooks, without the worker:
 * topology show / assert, test-alert, inject, console token. */
#include <curl/curl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "alerttest.h"
#include "amqp.h"
#include "buf.h"
#include "ctlargs.h"
#include "inject.h"
#include "token.h"
#include "topology.h"

#include "dlqctl.h"

int
cmd_topology_show(struct dlqctl *x, int argc, char **argv)
{
	const struct dlq_queue *q;
	struct dlq_buf b;
	size_t i;

	if (!dlq_args_done(1, argc, argv))
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
		    "\"dead_letter_strategy\":\"%s\",\"monitored\":%s}",
		    q->type == DLQ_QUEUE_QUORUM ? "quorum" : "classic",
		    (long long)q->retry_delay_ms, (long long)q->max_retries,
		    (long long)q->delivery_limit,
		    q->at_least_once ? "at-least-once" : "at-most-once",
		    q->monitored ? "true" : "false");
	}
	dlq_buf_adds(&b, "]}\n");
	fputs(b.data, stdout);
	dlq_buf_release(&b);
	return DLQ_EXIT_OK;
}

int
cmd_topology_assert(struct dlqctl *x, int argc, char **argv)
{
	struct dlq_assert_result res;
	enum dlq_amqp_status st;
	struct dlq_buf b;
	char why[512];

	if (!dlq_args_done(1, argc, argv))
		return DLQ_EXIT_USAGE;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)	/* for bindings */
		return DLQ_EXIT_ERROR;
	st = dlq_topology_apply(&x->cfg, x->top, &res, why, sizeof(why));
	curl_global_cleanup();
	if (st != DLQ_AMQP_OK) {
		fprintf(stderr, "dlqctl: %s\n", why);
		return DLQ_EXIT_ERROR;
	}
	if (x->json) {
		dlq_buf_init(&b);
		dlq_buf_printf(&b, "{\"declared\":%u,\"conflicts\":%u,"
		    "\"errors\":%u,\"refused\":%u,\"present\":%u,"
		    "\"missing\":%u,\"bindings_unchecked\":%u,"
		    "\"bindings_error\":", res.declared, res.conflicts,
		    res.errors, res.refused, res.present, res.missing,
		    res.unchecked);
		dlq_buf_json_cstr(&b, res.bindings_why[0] ? res.bindings_why :
		    NULL);
		dlq_buf_adds(&b, "}\n");
		fputs(b.data, stdout);
		dlq_buf_release(&b);
	} else
		printf("topology asserted: %zu queues (%zu monitored), "
		    "%u declarations, %u conflicts, %u errors\n",
		    x->top->n_queues, dlq_topology_monitored(x->top),
		    res.declared, res.conflicts, res.errors);
	if (!x->json && res.refused > 0)
		printf("not permitted: %u declarations refused (%s); of those "
		    "looked for, %u found and %u missing; %u bindings "
		    "unchecked%s%s\n", res.refused, res.refusal, res.present,
		    res.missing, res.unchecked, res.bindings_why[0] ? ": " : "",
		    res.bindings_why);
	return res.conflicts || res.errors || res.refused ?
	    DLQ_EXIT_CONFLICT : DLQ_EXIT_OK;
}

int
cmd_test_alert(struct dlqctl *x, int argc, char **argv)
{
	int failed;

	if (!dlq_args_done(1, argc, argv))
		return DLQ_EXIT_USAGE;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return DLQ_EXIT_ERROR;
	failed = dlq_alert_test(&x->cfg, stdout);
	curl_global_cleanup();
	return failed ? DLQ_EXIT_ERROR : DLQ_EXIT_OK;
}

int
cmd_inject(struct dlqctl *x, int argc, char **argv)
{
	cJSON *r = cJSON_CreateObject(), *n, *k;
	int rc = DLQ_EXIT_USAGE;

	if (!dlq_args_options(r, argc, argv, "queue count error retries") ||
	    !dlq_args_done(optind, argc, argv) ||
	    !dlq_args_require(r, argv[0], "queue"))
		goto out;
	n = cJSON_GetObjectItem(r, "count");
	k = cJSON_GetObjectItem(r, "retries");
	rc = dlq_inject(&x->cfg, x->top, dlq_args_str(r, "queue"),
	    n ? (int)n->valuedouble : 10, dlq_args_str(r, "error") ?
	    dlq_args_str(r, "error") : "upstream timeout after 30000 ms (demo)",
	    k ? (int)k->valuedouble : 0, stdout) == 0 ? DLQ_EXIT_OK :
	    DLQ_EXIT_ERROR;
out:
	cJSON_Delete(r);
	return rc;
}

/* A new console token for NAME with ROLE: the token once, on stdout,
 * and the line for console.tokens_file, which holds only its hash. */
int
cmd_console_token(struct dlqctl *x, int argc, char **argv)
{
	char token[DLQ_TOKEN_LEN + 1], hash[DLQ_TOKEN_HASH_LEN + 1];
	const char *file = x->cfg.console_tokens_file;
	cJSON *j;
	char *text;

	if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-') {
		fprintf(stderr, "usage: dlqctl console token NAME ROLE\n");
		return DLQ_EXIT_USAGE;
	}
	if (!dlq_user_name_valid(argv[1])) {
		fprintf(stderr, "dlqctl: a user name is 1 to %d letters, digits, "
		    ". _ @ or -\n", DLQ_USER_NAME_MAX);
		return DLQ_EXIT_USAGE;
	}
	if (dlq_role_parse(argv[2]) == DLQ_ROLE_NONE) {
		fprintf(stderr, "dlqctl: unknown role '%.20s' (viewer, operator, "
		    "admin)\n", argv[2]);
		return DLQ_EXIT_USAGE;
	}
	if (!dlq_token_new(token)) {
		fprintf(stderr, "dlqctl: no random bytes from the kernel\n");
		return DLQ_EXIT_ERROR;
	}
	dlq_token_hash(token, strlen(token), hash);
	if (x->json) {
		j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "name", argv[1]);
		cJSON_AddStringToObject(j, "role", argv[2]);
		cJSON_AddStringToObject(j, "token", token);
		cJSON_AddStringToObject(j, "sha256", hash);
		text = cJSON_PrintUnformatted(j);
		printf("%s\n", text);
		cJSON_free(text);
		cJSON_Delete(j);
		return DLQ_EXIT_OK;
	}
	printf("token: %s\n", token);
	printf("Give it to %s (it is shown once), and add this line to %s:\n",
	    argv[1], file != NULL ? file : "the file console.tokens_file "
	    "names");
	printf("%s %s %s\n", argv[1], argv[2], hash);
	return DLQ_EXIT_OK;
}
