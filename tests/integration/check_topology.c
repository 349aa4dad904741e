/* check_topology.c - asserting the topology against a real RabbitMQ:
 * the shipped 37-queue file, idempotence, and conflicts left intact. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "harness.h"

#define WAIT_MS	20000

/* Copy of `text` with every `from` replaced by `to`. */
static char *
replace(const char *text, const char *from, const char *to)
{
	size_t nf = strlen(from), nt = strlen(to), n = 0;
	const char *p;
	char *out, *o;

	for (p = text; (p = strstr(p, from)) != NULL; p += nf)
		n++;
	out = o = malloc(strlen(text) + n * nt + 1);
	while ((p = strstr(text, from)) != NULL) {
		memcpy(o, text, (size_t)(p - text));
		o += p - text;
		memcpy(o, to, nt);
		o += nt;
		text = p + nf;
	}
	strcpy(o, text);
	return out;
}

/* topology/line.conf with every queue and exchange name prefixed. */
static const char *
prefixed_line_topology(const char *prefix)
{
	char *text = h_slurp("topology/line.conf"), *a, *b, to[128];
	const char *path;

	ck_assert_ptr_nonnull(strstr(text, "message_received_trigger"));
	snprintf(to, sizeof(to), "name = \"%s_", prefix);
	a = replace(text, "name = \"", to);
	snprintf(to, sizeof(to), "\"%s_line_exchange", prefix);
	b = replace(a, "\"line_exchange", to);
	path = h_write_file("line.conf", b);
	free(text);
	free(a);
	free(b);
	return path;
}

static const char *
config_for(const char *topology)
{
	char cfg[1024];

	snprintf(cfg, sizeof(cfg), "rabbitmq = { url = \"%s\"; };\n"
	    "topology = { file = \"%s\"; };\n", h_url(), topology);
	return h_write_file("worker.conf", cfg);
}

static int
by_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* This test's queues with their arguments and message counts, one per
 * line, sorted: the broker lists them in no fixed order. */
static char *
list_queues(const char *prefix)
{
	char port[16], *out, *line, *nl, *res, **lines;
	size_t len = 0, n = 0, i;

	snprintf(port, sizeof(port), "%d", h_port());
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash",
	    "scripts/broker.sh", "ctl", port, "list_queues", "-q", "--no-table-headers",
	    "name", "arguments", "messages", NULL }, NULL, &out), 0);
	res = calloc(1, strlen(out) + 1);
	lines = calloc(strlen(out) + 1, sizeof(*lines));
	for (line = out; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		*nl = '\0';
		if (strncmp(line, prefix, strlen(prefix)) == 0)
			lines[n++] = line;
	}
	qsort(lines, n, sizeof(*lines), by_text);
	for (i = 0; i < n; i++)
		len += (size_t)sprintf(res + len, "%s\n", lines[i]);
	free(lines);
	free(out);
	return res;
}

static int
count_lines_with(const char *text, const char *needle)
{
	int n = 0;

	for (; (text = strstr(text, needle)) != NULL; text++)
		n++;
	return n;
}

START_TEST(line_topology_asserts_twice_without_change)
{
	char prefix[64], q[160], *before, *after, *out;
	const char *cfg;
	struct h_worker w;
	size_t i;
	int rc;

	h_name(prefix, sizeof(prefix), "line");
	cfg = config_for(prefixed_line_topology(prefix));

	rc = h_run((const char *[]){ h_bin("dlq-worker"), "-c", cfg,
	    "--assert-only", NULL }, NULL, &out);
	ck_assert_msg(rc == 0, "first assert: %d\n%s", rc, out);
	ck_assert_ptr_nonnull(strstr(out, "\"conflicts\":0"));
	free(out);
	before = list_queues(prefix);
	/* 37 work queues, 36 retry queues (analytics_ingest has none),
	 * 37 dead-letter queues */
	ck_assert_int_eq(count_lines_with(before, "\n") , 37 + 36 + 37);
	ck_assert_int_eq(count_lines_with(before, ".dlq\t"), 37);

	rc = h_run((const char *[]){ h_bin("dlq-worker"), "-c", cfg,
	    "--assert-only", NULL }, NULL, &out);
	ck_assert_msg(rc == 0, "second assert: %d\n%s", rc, out);
	ck_assert_ptr_nonnull(strstr(out, "\"conflicts\":0"));
	free(out);
	after = list_queues(prefix);
	/* (not ck_assert_str_eq: Check cannot carry a message this long;
	 * the first line that differs says enough) */
	for (i = 0; before[i] != '\0' && before[i] == after[i]; i++)
		;
	while (i > 0 && before[i - 1] != '\n')
		i--;
	ck_assert_msg(strcmp(before, after) == 0, "the second assert changed "
	    "the queues: before '%.150s', after '%.150s'", before + i,
	    after + i);

	/* dlqctl shows the 36 monitored DLQs, not message_received_trigger */
	rc = h_run((const char *[]){ h_bin("dlqctl"), "-c", cfg, "topology",
	    "show", NULL }, NULL, &out);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(count_lines_with(out, ".dlq\n"), 36);
	ck_assert_ptr_null(strstr(out, "message_received_trigger"));
	free(out);

	/* The worker consumes exactly the 36 monitored DLQs. */
	h_worker_start(&w, (const char *[]){ "-c", cfg, NULL }, NULL);
	ck_assert(h_worker_wait(&w, "consumer_started", 36, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&w, 10000, NULL), 0);
	ck_assert_int_eq(h_worker_count(&w, "consumer_started"), 36);
	out = h_slurp(w.log);
	snprintf(q, sizeof(q), "%s_message_received_trigger.dlq", prefix);
	ck_assert_ptr_null(strstr(out, q));
	free(out);
	free(before);
	free(after);
}
END_TEST

START_TEST(conflicting_queue_is_reported_and_left_intact)
{
	char prefix[64], busy[128], other[128], busy_dlq[160], other_dlq[160];
	const char *queues[3], *cfg;
	amqp_connection_state_t c;
	cJSON *ev;
	char *out, *line;
	int i, rc;

	h_name(prefix, sizeof(prefix), "cf");
	snprintf(busy, sizeof(busy), "%s_busy", prefix);
	snprintf(other, sizeof(other), "%s_other", prefix);
	snprintf(busy_dlq, sizeof(busy_dlq), "%s.dlq", busy);
	snprintf(other_dlq, sizeof(other_dlq), "%s.dlq", other);
	/* Someone declared `busy` earlier without dead-lettering, and it
	 * holds messages. */
	c = h_connect();
	ck_assert_ptr_nonnull(amqp_queue_declare(c, 1, amqp_cstring_bytes(busy),
	    0, 1, 0, 0, amqp_empty_table));
	for (i = 0; i < 3; i++)
		h_publish(c, "", busy, "{}", 2, "keep", NULL);
	h_close(c);
	ck_assert(h_wait_count(busy, 3, WAIT_MS));

	queues[0] = busy;
	queues[1] = other;
	queues[2] = NULL;
	cfg = h_setup(prefix, queues, NULL);
	rc = h_run((const char *[]){ h_bin("dlq-worker"), "-c", cfg,
	    "--assert-only", NULL }, NULL, &out);
	ck_assert_msg(rc == 3, "exit %d\n%s", rc, out);
	line = strstr(out, "{\"ts\"");
	ck_assert_ptr_nonnull(line = strstr(out, "\"topology_conflict\""));
	while (line > out && line[-1] != '\n')
		line--;
	*strchr(line, '\n') = '\0';
	ck_assert_ptr_nonnull(ev = cJSON_Parse(line));
	ck_assert_str_eq(cJSON_GetObjectItem(ev, "name")->valuestring, busy);
	ck_assert_str_eq(cJSON_GetObjectItem(ev, "object")->valuestring, "queue");
	ck_assert_str_eq(cJSON_GetObjectItem(ev, "argument")->valuestring,
	    "x-dead-letter-exchange");
	ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(ev, "wanted")->valuestring,
	    "_dlx"));
	ck_assert_str_eq(cJSON_GetObjectItem(ev, "live")->valuestring, "none");
	cJSON_Delete(ev);
	free(out);

	/* left intact, and the rest was still asserted */
	ck_assert_int_eq(h_count(busy), 3);
	ck_assert_int_eq(h_count(busy_dlq), 0);
	ck_assert_int_eq(h_count(other), 0);
	ck_assert_int_eq(h_count(other_dlq), 0);

	/* dlqctl says the same with its exit status */
	rc = h_run((const char *[]){ h_bin("dlqctl"), "-c", cfg, "topology",
	    "assert", NULL }, NULL, &out);
	ck_assert_int_eq(rc, 3);
	ck_assert_ptr_nonnull(strstr(out, "1 conflicts"));
	free(out);
	ck_assert_int_eq(h_count(busy), 3);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("topology");
	TCase *tc = tcase_create("assert");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, line_topology_asserts_twice_without_change);
	tcase_add_test(tc, conflicting_queue_is_reported_and_left_intact);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
