/* check_ops.c - the operations surface: /metrics, /readyz, threshold
 * alerts, dlqctl inject, the compose file and the image's libraries. */
#include <check.h>
#include <ctype.h>
#include <limits.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check_main.h"
#include "buf.h"
#include "harness.h"

#define WAIT_MS	20000

struct fixture {
	struct h_rig	 rig;
	char		 base[96];	/* http://host:port of /metrics */
};

/* The HTTP server on `host` (as http.listen writes it, without the
 * port), asked at `url_host`; the second queue's retries wait
 * `retry_ms` (0: no retry queue). */
static void
start_on(struct fixture *f, const char *host, const char *url_host,
    int retry_ms, const char *extra)
{
	char conf[1024];
	int port = h_free_port();

	h_rig_name(&f->rig, "op", 2);
	f->rig.retry_ms[1] = retry_ms;
	snprintf(f->base, sizeof(f->base), "http://%s:%d", url_host, port);
	snprintf(conf, sizeof(conf), "http = { listen = \"%s:%d\"; };\n%s",
	    host, port, extra ? extra : "");
	h_rig_setup(&f->rig, conf);
	h_rig_start(&f->rig);
}

static void
start(struct fixture *f, int retry_ms, const char *extra)
{
	start_on(f, "127.0.0.1", "127.0.0.1", retry_ms, extra);
}

static size_t
collect(char *p, size_t size, size_t n, void *arg)
{
	struct dlq_buf *b = arg;

	dlq_buf_add(b, p, size * n);
	return size * n;
}

/* `method` (NULL: GET) base + path from the local address `source`
 * (NULL: any); the status (0: no answer), the body in *body and, unless
 * `headers` is NULL, the answer's header lines in *headers (malloc'd). */
static long
http_request(const struct fixture *f, const char *method, const char *path,
    const char *source, char **body, char **headers)
{
	struct dlq_buf b, hb;
	char url[128];
	long status = 0;
	CURL *h = curl_easy_init();

	dlq_buf_init(&b);
	dlq_buf_init(&hb);
	snprintf(url, sizeof(url), "%s%s", f->base, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	if (method != NULL)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (source != NULL)
		curl_easy_setopt(h, CURLOPT_INTERFACE, source);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &hb);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	*body = b.data ? b.data : strdup("");
	if (headers != NULL)
		*headers = hb.data ? hb.data : strdup("");
	else
		dlq_buf_release(&hb);
	return status;
}

static long
http_get_from(const struct fixture *f, const char *path, const char *source,
    char **body)
{
	return http_request(f, NULL, path, source, body, NULL);
}

static long
http_get(const struct fixture *f, const char *path, char **body)
{
	return http_get_from(f, path, NULL, body);
}

static bool
metric_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' ||
	    s[0] == ':'))
		return false;
	for (i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return false;
	return true;
}

/* A TCP connection to the fixture's HTTP port from the loopback address
 * `source`, left idle. */
static int
idle_connection(const struct fixture *f, const char *source)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	ck_assert_int_eq(inet_pton(AF_INET, source, &a.sin_addr), 1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	a.sin_port = htons((uint16_t)atoi(strrchr(f->base, ':') + 1));
	ck_assert_int_eq(inet_pton(AF_INET, "127.0.0.1", &a.sin_addr), 1);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Waits up to timeout_ms until `want` of the n connections are closed by
 * the server; how many are. */
static int
wait_closed(struct pollfd *p, int n, int want, int timeout_ms)
{
	int64_t end = h_now_ms() + timeout_ms;
	int i, closed;
	char c;

	for (;;) {
		for (i = 0, closed = 0; i < n; i++) {
			if (p[i].fd >= 0 && p[i].revents == 0)
				continue;
			if (p[i].fd >= 0) {	/* readable: closed, or reset */
				ck_assert_int_le(recv(p[i].fd, &c, 1, 0), 0);
				close(p[i].fd);
				p[i].fd = -1;
			}
			closed++;
		}
		if (closed >= want || h_now_ms() >= end)
			return closed;
		poll(p, (nfds_t)n, 100);
	}
}

/* A client that holds every connection it can (leaked, or on purpose)
 * keeps no other address out: 8 of one address are served and more are
 * closed at once, so /readyz answers another address all along; the
 * address gets its turn again once it lets go. */
START_TEST(one_address_cannot_hold_every_http_connection)
{
	struct fixture f;
	struct pollfd p[32];
	int64_t end;
	long status;
	char *body;
	int i;

	start(&f, 0, NULL);
	for (i = 0; i < 32; i++) {
		p[i].fd = idle_connection(&f, "127.0.0.2");
		p[i].events = POLLIN;
		p[i].revents = 0;
	}
	ck_assert_int_eq(wait_closed(p, 32, 24, 5000), 24);
	ck_assert_int_eq(wait_closed(p, 32, 25, 300), 24);
	ck_assert_int_eq(http_get_from(&f, "/readyz", "127.0.0.1", &body),
	    200);
	free(body);
	ck_assert_int_eq(http_get_from(&f, "/healthz", "127.0.0.2", &body), 0);
	free(body);
	for (i = 0; i < 32; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	/* the server sees the closes within its next poll */
	end = h_now_ms() + 5000;
	while ((status = http_get_from(&f, "/healthz", "127.0.0.2", &body)) !=
	    200 && h_now_ms() < end) {
		free(body);
		usleep(50 * 1000);
	}
	ck_assert_int_eq(status, 200);
	ck_assert_str_eq(body, "ok\n");
	free(body);
	h_rig_stop(&f.rig);
}
END_TEST

/* http.listen "[::]:PORT" (an IPv6-only network, or both families on
 * one socket) answers IPv6 and IPv4 clients alike. */
START_TEST(an_ipv6_listener_answers_both_families)
{
	struct fixture f;
	char *body, v4[sizeof(f.base)];

	start_on(&f, "[::]", "[::1]", 0, NULL);
	ck_assert_int_eq(http_get(&f, "/healthz", &body), 200);
	ck_assert_str_eq(body, "ok\n");
	free(body);
	snprintf(v4, sizeof(v4), "http://127.0.0.1:%s", strrchr(f.base, ':') +
	    1);
	memcpy(f.base, v4, sizeof(f.base));
	ck_assert_int_eq(http_get(&f, "/healthz", &body), 200);
	ck_assert_str_eq(body, "ok\n");
	free(body);
	ck_assert(h_worker_wait(&f.rig.w, "http_listening", 1, WAIT_MS));
	h_rig_stop(&f.rig);
}
END_TEST

/* A strict reading of the text exposition format: every sample belongs
 * to a family declared by # TYPE before it, names and labels are well
 * formed, label values properly escaped, values are numbers. Returns the
 * sum of the samples whose line starts with `want` (or -1 when none). */
static double
check_exposition(const char *text, const char *want)
{
	char typed[64][96], *copy = strdup(text), *line, *save, *p, *end;
	size_t nt = 0, i, n;
	double sum = -1, v;
	bool known;

	for (line = strtok_r(copy, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "# TYPE ", 7) == 0) {
			p = line + 7;
			n = strcspn(p, " ");
			ck_assert_msg(metric_name(p, n), "bad TYPE: %s", line);
			ck_assert(strstr(" counter gauge histogram summary untyped",
			    p + n) != NULL);
			ck_assert_int_lt(nt, 64);
			snprintf(typed[nt++], sizeof(typed[0]), "%.*s", (int)n, p);
			continue;
		}
		if (strncmp(line, "# HELP ", 7) == 0)
			continue;
		ck_assert_msg(line[0] != '#', "stray comment: %s", line);
		n = strcspn(line, "{ ");
		ck_assert_msg(metric_name(line, n), "bad name: %s", line);
		for (i = 0, known = false; i < nt && !known; i++) {
			size_t tl = strlen(typed[i]);
			known = strncmp(line, typed[i], tl) == 0 && (tl == n ||
			    strncmp(line + tl, "_bucket", n - tl) == 0 ||
			    strncmp(line + tl, "_sum", n - tl) == 0 ||
			    strncmp(line + tl, "_count", n - tl) == 0);
		}
		ck_assert_msg(known, "sample before its TYPE: %s", line);
		p = line + n;
		if (*p == '{') {
			for (p++; *p != '}'; ) {
				n = strcspn(p, "=");
				ck_assert_msg(metric_name(p, n), "bad label: %s", line);
				p += n;
				ck_assert(p[0] == '=' && p[1] == '"');
				for (p += 2; *p != '"'; p++) {
					ck_assert_msg(*p != '\0', "open label: %s", line);
					if (*p == '\\') {
						p++;
						ck_assert(*p == '\\' || *p == '"' ||
						    *p == 'n');
					}
				}
				p++;
				if (*p == ',')
					p++;
				else
					ck_assert_msg(*p == '}', "bad labels: %s",
					    line);
			}
			p++;
		}
		ck_assert_msg(*p == ' ', "no value: %s", line);
		v = strtod(p + 1, &end);
		ck_assert_msg(end != p + 1 && (*end == '\0' || *end == ' '),
		    "bad value: %s", line);
		if (strncmp(line, want, strlen(want)) == 0)
			sum = (sum < 0 ? 0 : sum) + v;
	}
	free(copy);
	return sum;
}

/* Removes the label replica="..." from every series of `body`, in
 * place. */
static void
strip_replica(char *body)
{
	char *p, *q, *end;

	while ((p = strstr(body, "{replica=\"")) != NULL) {
		q = strchr(p + 10, '"');
		ck_assert_ptr_nonnull(q);
		end = q + 2;	/* past its "," or "}" */
		if (q[1] == ',')	/* {replica="x",dlq=... */
			memmove(p + 1, end, strlen(end) + 1);
		else			/* name{replica="x"} value */
			memmove(p, end, strlen(end) + 1);
		body = p;
	}
}

/* promtool, Debian's (scripts/deps.sh test unpacks it; DLQ_PROMTOOL
 * names another), lints an exposition as Prometheus would scrape it:
 * nothing to say, exit 0. Its lint goes beyond check_exposition(): a
 * counter's _total, help texts, names. */
static void
promtool_accepts(const char *body)
{
	const char *tool = getenv("DLQ_PROMTOOL");
	char cmd[600], *out;
	int rc;

	if (tool == NULL)
		tool = "/usr/local/lib/dlq-monitor/promtool";
	snprintf(cmd, sizeof(cmd), "exec %s check metrics < %s", tool,
	    h_write_file("metrics", body));
	rc = h_run((const char *[]){ "/bin/sh", "-c", cmd, NULL }, NULL, &out);
	ck_assert_msg(rc == 0 && out[0] == '\0', "%s: exit %d: %s", cmd, rc,
	    out);
	free(out);
}

/* GET /metrics. On a PostgreSQL archive the worker's own series carry
 * its name among replicas (checked here, and linted as served); the
 * answer comes back without it, so that the same assertions hold on
 * both backends. */
static long
metrics_get(const struct fixture *f, char **body)
{
	char want[400], host[256];
	long status = http_get(f, "/metrics", body);

	if (status != 200 || !h_archive_is_postgres())
		return status;
	ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
	snprintf(want, sizeof(want), "\ndlq_topology_asserted{replica=\"%.*s:%d"
	    "\"} ", 200, host, (int)f->rig.w.pid);
	ck_assert_msg(strstr(*body, want) != NULL, "no %s", want + 1);
	promtool_accepts(*body);
	strip_replica(*body);
	return status;
}

/* n messages with error `error` die in queue q. With ids, waits until
 * each is archived and gives its archive id, in the order sent (the
 * queue must then be empty: the n rejected are the first n there). */
static void
die_in(struct fixture *f, int q, int n, const char *error, int64_t *ids)
{
	static int seq;
	amqp_table_entry_t e;
	amqp_table_t h = { 1, &e };
	char id[128];
	int i, first = seq;

	e.key = amqp_cstring_bytes("x-error");
	e.value.kind = AMQP_FIELD_KIND_UTF8;
	e.value.value.bytes = amqp_cstring_bytes(error);
	ck_assert_msg(ids == NULL || h_count(f->rig.q[q]) == 0, "die_in: %s "
	    "is not empty", f->rig.q[q]);
	for (i = 0; i < n; i++) {
		/* distinct ids: identical twins count as one dead letter */
		snprintf(id, sizeof(id), "%s-%d-%d", error, q, seq++);
		h_publish(f->rig.c, f->rig.exch, f->rig.q[q], "{}", 2, id, &h);
	}
	ck_assert_int_eq(h_reject(f->rig.c, f->rig.q[q], n, WAIT_MS), n);
	for (i = 0; ids != NULL && i < n; i++) {
		snprintf(id, sizeof(id), "%s-%d-%d", error, q, first + i);
		ids[i] = h_archived(&f->rig.w, id, 1, WAIT_MS);
	}
}

/* Nothing answers at the broker's port when the worker starts: health
 * (200), readiness (503, saying why), metrics (each consumer down) and
 * the archive's reads answer within 2 s, and a SIGTERM during the wait
 * stops it cleanly (shutdown logged, exit 0). */
START_TEST(health_metrics_and_reads_answer_while_the_broker_is_down)
{
	struct fixture f;
	char conf[128], env[128], want[256], *body = NULL;
	int64_t t0;
	long status = 0;
	cJSON *j;
	int port = h_free_port();

	h_rig_name(&f.rig, "down", 2);
	snprintf(f.base, sizeof(f.base), "http://127.0.0.1:%d", port);
	snprintf(conf, sizeof(conf), "http = { listen = \"127.0.0.1:%d\"; };",
	    port);
	h_rig_setup(&f.rig, conf);
	snprintf(env, sizeof(env), "RABBITMQ_URL=amqp://guest:guest@"
	    "127.0.0.1:%d/", h_free_port());
	t0 = h_now_ms();
	h_worker_start(&f.rig.w, (const char *[]){ "-c", f.rig.cfg, NULL },
	    (const char *[]){ env, NULL });
	while (status != 200 && h_now_ms() - t0 < 2000) {
		free(body);
		body = NULL;
		if ((status = http_get(&f, "/healthz", &body)) != 200)
			usleep(20000);
	}
	ck_assert_int_eq(status, 200);
	free(body);
	/* not ready, saying why: first that it has not connected yet,
	 * then why its first attempt failed */
	do {
		ck_assert_int_eq(http_get(&f, "/readyz", &body), 503);
		ck_assert_msg(strstr(body, "\"broker_error\":\"") != NULL &&
		    strstr(body, "\"ready\":false") != NULL, "%s", body);
		if (strstr(body, "connection refused") == NULL) {
			free(body);
			body = NULL;
			usleep(20000);
		}
	} while (body == NULL && h_now_ms() - t0 < 2000);
	ck_assert_msg(body != NULL && strstr(body, "\"broker_error\":\"cannot "
	    "connect to 127.0.0.1:") != NULL, "%s", body ? body : "(none)");
	snprintf(want, sizeof(want), "\"%s\"", f.rig.dlq[0]);
	ck_assert_msg(strstr(body, want) != NULL, "consumers_down: %s", body);
	free(body);
	ck_assert_int_eq(metrics_get(&f, &body), 200);
	snprintf(want, sizeof(want), "dlq_consumer_up{dlq=\"%s\"} 0\n",
	    f.rig.dlq[0]);
	ck_assert_msg(strstr(body, want) != NULL, "%s", body);
	ck_assert_ptr_nonnull(strstr(body, "dlq_topology_asserted 0\n"));
	free(body);
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, &j, (const char *[]){
	    "list", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 0);
	cJSON_Delete(j);
	ck_assert_int_lt(h_now_ms() - t0, 2000);

	h_close(f.rig.c);
	ck_assert_int_eq(h_worker_stop(&f.rig.w, 5000, NULL), 0);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "shutdown"), 1);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "consumer_started"), 0);
}
END_TEST

START_TEST(metrics_count_what_happened)
{
	struct fixture f;
	char *body, *headers, want[300];

	start(&f, 0, NULL);
	die_in(&f, 0, 7, "connect ETIMEDOUT", NULL);
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 7, WAIT_MS));
	ck_assert_int_eq(metrics_get(&f, &body), 200);
	snprintf(want, sizeof(want), "dlq_dead_letters_total{dlq=\"%s.dlq\","
	    "reason=\"rejected\",class=\"transient\"}", f.rig.q[0]);
	ck_assert_msg(check_exposition(body, want) == 7, "%s", body);
	ck_assert(check_exposition(body, "dlq_acks_total") >= 7);
	/* one label for the DLQ in every series */
	snprintf(want, sizeof(want), "dlq_unresolved{dlq=\"%s\","
	    "status=\"open\"}", f.rig.dlq[0]);
	ck_assert(check_exposition(body, want) == 7);
	snprintf(want, sizeof(want), "dlq_consumer_up{dlq=\"%s\"}",
	    f.rig.dlq[1]);
	ck_assert(check_exposition(body, want) == 1);
	snprintf(want, sizeof(want), "dlq_consumer_others{dlq=\"%s\"}",
	    f.rig.dlq[1]);
	ck_assert(check_exposition(body, want) == 0);
	ck_assert(check_exposition(body, "dlq_archive_commit_seconds_count") >=
	    1);
	ck_assert(check_exposition(body, "dlq_topology_asserted") == 1);
	promtool_accepts(body);
	free(body);
	ck_assert_int_eq(http_get(&f, "/healthz", &body), 200);
	free(body);
	ck_assert_int_eq(http_get(&f, "/nothing", &body), 404);
	free(body);
	/* it only answers GET (and HEAD), and says so */
	ck_assert_int_eq(http_request(&f, "POST", "/metrics", NULL, &body,
	    &headers), 405);
	ck_assert_str_eq(body, "method not allowed\n");
	ck_assert_ptr_nonnull(strstr(headers, "\r\nAllow: GET, HEAD\r\n"));
	free(body);
	free(headers);
	h_rig_stop(&f.rig);
}
END_TEST

/* The age of the oldest unresolved dead letter of the rig's DLQ q in a
 * scrape; -1 when it has no series. */
static double
oldest_unresolved_age(struct fixture *f, int q)
{
	char *body, want[300];
	double age;

	ck_assert_int_eq(metrics_get(f, &body), 200);
	snprintf(want, sizeof(want), "dlq_oldest_unresolved_age_seconds{dlq="
	    "\"%s\"}", f->rig.dlq[q]);
	age = check_exposition(body, want);
	free(body);
	return age;
}

/* The oldest unresolved age of a DLQ is that of the record still
 * unresolved: when the oldest is dropped the next one's age shows, and
 * the series goes with the last; another DLQ's stays. */
START_TEST(the_oldest_unresolved_age_follows_what_is_resolved)
{
	struct fixture f;
	int64_t first, second, other;
	char id[24];
	double age;

	start(&f, 0, NULL);
	die_in(&f, 0, 1, "timeout", &first);
	die_in(&f, 1, 1, "timeout", &other);
	usleep(1500 * 1000);	/* makes the next one 1.5 s younger */
	die_in(&f, 0, 1, "timeout", &second);
	ck_assert_double_ge(oldest_unresolved_age(&f, 0), 1.5);
	snprintf(id, sizeof(id), "%lld", (long long)first);
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, NULL, (const char *[]){
	    "drop", id, "--reason", "obsolete", "--yes", NULL }), 0);
	age = oldest_unresolved_age(&f, 0);
	ck_assert_msg(age >= 0 && age < 1.5, "age %.3f", age);
	ck_assert_double_ge(oldest_unresolved_age(&f, 1), 1.5);
	snprintf(id, sizeof(id), "%lld", (long long)second);
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, NULL, (const char *[]){
	    "drop", id, "--reason", "obsolete", "--yes", NULL }), 0);
	ck_assert_double_eq(oldest_unresolved_age(&f, 0), -1);
	ck_assert_double_ge(oldest_unresolved_age(&f, 1), 1.5);
	(void)other;
	h_rig_stop(&f.rig);
}
END_TEST

static bool
wait_status(struct fixture *f, const char *path, long want, int ms)
{
	int64_t end = h_now_ms() + ms;
	char *body;
	long st;

	do {
		st = http_get(f, path, &body);
		free(body);
		if (st == want)
			return true;
		usleep(100 * 1000);
	} while (h_now_ms() < end);
	return false;
}

START_TEST(readyz_follows_the_broker)
{
	struct fixture f;
	char port[16], *out, *body;

	start(&f, 0, NULL);
	ck_assert(wait_status(&f, "/readyz", 200, WAIT_MS));
	h_close(f.rig.c);
	snprintf(port, sizeof(port), "%d", h_port());
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash", "scripts/broker.sh",
	    "stop", port, NULL }, NULL, &out), 0);
	free(out);
	ck_assert(wait_status(&f, "/readyz", 503, WAIT_MS));
	ck_assert_int_eq(http_get(&f, "/readyz", &body), 503);
	/* named as down */
	ck_assert_ptr_nonnull(strstr(body, f.rig.q[0]));
	ck_assert_ptr_nonnull(strstr(body, "\"ready\":false"));
	free(body);
	ck_assert_int_eq(http_get(&f, "/healthz", &body), 200);
	free(body);
	ck_assert_int_eq(h_run((const char *[]){ "/bin/bash", "scripts/broker.sh",
	    "start", port, NULL }, NULL, &out), 0);
	free(out);
	ck_assert(wait_status(&f, "/readyz", 200, 60000));
	f.rig.c = h_connect();
	h_rig_stop(&f.rig);
}
END_TEST

/* A disk that refuses the archive's writes (here a file size limit set
 * on the running worker, as in check_archive.c) still lets a write
 * transaction begin: /readyz says the archive is not writable anyway,
 * with the reason, and /metrics too, until it takes writes again. */
START_TEST(readyz_says_when_the_disk_refuses_the_archive)
{
	struct fixture f;
	struct rlimit old, low;
	struct stat st;
	char wal[300], *body;

	start(&f, 0, NULL);
	ck_assert(wait_status(&f, "/readyz", 200, WAIT_MS));
	snprintf(wal, sizeof(wal), "%s-wal", f.rig.db);
	ck_assert_int_eq(stat(wal, &st), 0);
	ck_assert_int_eq(prlimit(f.rig.w.pid, RLIMIT_FSIZE, NULL, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)st.st_size + 2048;
	ck_assert_int_eq(prlimit(f.rig.w.pid, RLIMIT_FSIZE, &low, NULL), 0);
	die_in(&f, 0, 5, "refused", NULL);
	ck_assert(h_worker_wait(&f.rig.w, "archive_error", 1, WAIT_MS));
	ck_assert_int_eq(http_get(&f, "/readyz", &body), 503);
	ck_assert_msg(strstr(body, "\"archive_writable\":false,\"archive_error\":"
	    "\"") != NULL && strstr(body, "(File too large)\"") != NULL, "%s",
	    body);
	free(body);
	ck_assert_int_eq(metrics_get(&f, &body), 200);
	ck_assert(check_exposition(body, "dlq_archive_writable") == 0);
	free(body);
	ck_assert_int_eq(prlimit(f.rig.w.pid, RLIMIT_FSIZE, &old, NULL), 0);
	ck_assert(wait_status(&f, "/readyz", 200, 60000));
	ck_assert_int_eq(http_get(&f, "/readyz", &body), 200);
	ck_assert_ptr_null(strstr(body, "archive_error"));
	free(body);
	ck_assert_int_eq(metrics_get(&f, &body), 200);
	ck_assert(check_exposition(body, "dlq_archive_writable") == 1);
	free(body);
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 5, WAIT_MS));
	h_rig_stop(&f.rig);
}
END_TEST

START_TEST(a_threshold_alert_fires_once_per_cooldown)
{
	struct fixture f;
	cJSON **ev;
	int n, counted;

	start(&f, 0, "alert = { threshold = 3; max_age_ms = 0; "
	    "threshold_cooldown_ms = 600000; threshold_check_ms = 100; "
	    "cooldown_ms = 0; };");
	die_in(&f, 0, 2, "boom", NULL);
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 2, WAIT_MS));
	ck_assert(!h_worker_wait(&f.rig.w, "threshold_alert", 1, 1000));
	die_in(&f, 1, 3, "bang", NULL);
	ck_assert(h_worker_wait(&f.rig.w, "threshold_alert", 1, WAIT_MS));
	/* still above the threshold, checked twenty more times: no repeat */
	die_in(&f, 1, 2, "bang", NULL);
	ck_assert(!h_worker_wait(&f.rig.w, "threshold_alert", 2, 2000));
	ev = h_worker_events(&f.rig.w, "threshold_alert", &n);
	ck_assert_str_eq(cJSON_GetObjectItem(ev[0], "kind")->valuestring,
	    "unresolved");
	/* numbers are JSON numbers: 2 + 3 dead letters, above 3 at 4 or 5 */
	ck_assert_int_eq(h_jnum(ev[0], "limit"), 3);
	ck_assert_int_ge(h_jnum(ev[0], "value"), 4);
	ck_assert_int_le(h_jnum(ev[0], "value"), 5);
	h_events_free(ev, n);
	/* it reached the digest, in its own section; the titles count the
	 * 7 dead letters only */
	ck_assert(h_wait_digests_with(&f.rig.w, "\nThreshold crossed\n• ",
	    "unresolved dead letters (threshold 3)", 1, WAIT_MS));
	ck_assert(h_wait_digest_titles(&f.rig.w, 7, WAIT_MS, &counted));
	ck_assert_int_eq(counted, 7);
	/* a restart (a deploy, a crash loop) does not fire it again within
	 * its cooldown: twenty checks of the new process */
	ck_assert_int_eq(h_worker_stop(&f.rig.w, 10000, NULL), 0);
	h_rig_start(&f.rig);
	ck_assert(!h_worker_wait(&f.rig.w, "threshold_alert", 1, 2000));
	h_rig_stop(&f.rig);
}
END_TEST

START_TEST(escalations_show_in_stats_metrics_and_once_in_the_digest)
{
	struct fixture f;
	char *body, a_ref[32], b_ref[32], a_id[24], c_id[24];
	const cJSON *e;
	int64_t ids[2];
	cJSON *st;

	/* open cases escalate after 1.5 s without an owner */
	start(&f, 0, "alert = { cooldown_ms = 200; threshold = 0; "
	    "max_age_ms = 0; threshold_check_ms = 100; };\n"
	    "cases = { owner_sla_ms = 1500; };");
	die_in(&f, 0, 2, "upstream timeout", ids);
	/* A: assigned, to be decided within a second; B: nobody takes it */
	snprintf(a_id, sizeof(a_id), "%lld", (long long)ids[0]);
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, NULL, (const char *[]){
	    "assign", a_id, "--owner", "payments", "--decision", "charge again?",
	    "--escalate-in", "1s", NULL }), 0);
	snprintf(a_ref, sizeof(a_ref), "#%lld ", (long long)ids[0]);
	snprintf(b_ref, sizeof(b_ref), "#%lld ", (long long)ids[1]);
	ck_assert(h_worker_wait(&f.rig.w, "case_escalated", 2, WAIT_MS));

	/* stats */
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, &st, (const char *[]){
	    "stats", NULL }), 0);
	e = cJSON_GetObjectItem(st, "escalations");
	ck_assert_int_eq(cJSON_GetObjectItem(e, "past_escalate_at")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "unowned_past_sla")->valueint, 1);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(e, "cases")), 2);
	e = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "decisions"),
	    "time_to_owner_ms");
	ck_assert_int_eq(cJSON_GetObjectItem(e, "count")->valueint, 1);
	cJSON_Delete(st);

	/* metrics */
	ck_assert_int_eq(metrics_get(&f, &body), 200);
	ck_assert_msg(check_exposition(body, "dlq_escalations_overdue") == 1,
	    "%s", body);
	ck_assert(check_exposition(body, "dlq_cases_unowned_past_sla") == 1);
	ck_assert(check_exposition(body, "dlq_time_to_owner_seconds_count") ==
	    1);
	promtool_accepts(body);
	free(body);

	/* the digest: its own section, each case in it */
	ck_assert(h_worker_wait(&f.rig.w, "alert_digest", 1, WAIT_MS));
	ck_assert(h_wait_digests_with(&f.rig.w, "Needs a decision", b_ref, 1,
	    WAIT_MS));
	ck_assert_int_eq(h_digests_with(&f.rig.w, "Needs a decision", a_ref,
	    NULL), 1);
	ck_assert_int_eq(h_digests_with(&f.rig.w, "Needs a decision", b_ref,
	    NULL), 1);
	ck_assert_int_eq(h_digests_with(&f.rig.w, "payments has not decided",
	    NULL, NULL), 1);

	/* checked many times more, and another digest goes out: no repeat */
	die_in(&f, 1, 1, "another one", ids);
	snprintf(c_id, sizeof(c_id), "%lld", (long long)ids[0]);
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, NULL, (const char *[]){
	    "assign", c_id, "--owner", "ops", "--decision", "look", NULL }), 0);
	ck_assert(h_worker_wait(&f.rig.w, "alert_digest",
	    h_worker_count(&f.rig.w, "alert_digest") + 1, WAIT_MS));
	ck_assert_int_eq(h_digests_with(&f.rig.w, "Needs a decision", a_ref,
	    NULL), 1);
	ck_assert_int_eq(h_digests_with(&f.rig.w, "Needs a decision", b_ref,
	    NULL), 1);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "case_escalated"), 2);

	/* a new escalate-at that passes is a new escalation: once more */
	ck_assert_int_eq(h_dlqctl(f.rig.cfg, NULL, NULL, (const char *[]){
	    "assign", a_id, "--owner", "payments", "--decision", "charge again?",
	    "--escalate-in", "500ms", NULL }), 0);
	ck_assert(h_worker_wait(&f.rig.w, "case_escalated", 3, WAIT_MS));
	ck_assert(h_wait_digests_with(&f.rig.w, "Needs a decision", a_ref, 2,
	    WAIT_MS));
	ck_assert_int_eq(h_digests_with(&f.rig.w, "Needs a decision", a_ref,
	    NULL), 2);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "case_escalated"), 3);
	h_rig_stop(&f.rig);
}
END_TEST

/* A flood past the owner SLA: more cases than one chunk of the sweep
 * (DLQ_ESCALATE_CHUNK), many received in the same millisecond, each
 * announced once, however many checks run, and a later one too. */
START_TEST(a_flood_past_the_owner_sla_is_announced_once_each)
{
	struct fixture f;
	enum { FLOOD = 2500 };

	start(&f, 0, "alert = { threshold = 0; max_age_ms = 0; "
	    "threshold_check_ms = 100; };\n"
	    "cases = { owner_sla_ms = 1500; };");
	die_in(&f, 0, FLOOD, "flooded", NULL);
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", FLOOD, WAIT_MS));
	ck_assert(h_worker_wait(&f.rig.w, "case_escalated", FLOOD, WAIT_MS));
	/* a dozen checks later, one more crosses the SLA */
	die_in(&f, 1, 1, "later", NULL);
	ck_assert(h_worker_wait(&f.rig.w, "case_escalated", FLOOD + 1,
	    WAIT_MS));
	ck_assert_int_eq(h_worker_count(&f.rig.w, "case_escalated"), FLOOD + 1);
	h_rig_stop(&f.rig);
}
END_TEST

START_TEST(inject_makes_real_dead_letters)
{
	struct fixture f;
	amqp_connection_state_t conn;
	cJSON **ev, *xd, *x;
	char *out, *err, want[512];
	int n, i, j, rc;

	start(&f, 200, NULL);
	/* two messages of someone else wait in the work queue: inject
	 * fails only its own and puts these back */
	conn = h_connect();
	h_publish(conn, "", f.rig.q[1], "{}", 2, "theirs-1", NULL);
	h_publish(conn, "", f.rig.q[1], "{}", 2, "theirs-2", NULL);
	h_close(conn);
	ck_assert(h_wait_count(f.rig.q[1], 2, WAIT_MS));
	rc = h_run((const char *[]){ h_bin("dlqctl"), "-c", f.rig.cfg, "inject",
	    "--queue", f.rig.q[1], "--count", "3", "--retries", "2", "--error",
	    "HTTP 502 from provider", NULL }, NULL, &out);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "3 of 3 dead-lettered"));
	ck_assert_msg(strstr(out, "2 other messages met in") != NULL, "%s", out);
	free(out);
	ck_assert(h_wait_count(f.rig.q[1], 2, WAIT_MS));
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 3, WAIT_MS));
	ev = h_worker_events(&f.rig.w, "dead_letter", &n);
	ck_assert_int_eq(n, 3);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(cJSON_GetObjectItem(ev[i], "x_retry_count")->valueint,
		    2);
		ck_assert_str_eq(cJSON_GetObjectItem(ev[i], "class")->valuestring,
		    "transient");
		/* the demo payload's personal data is masked in the log */
		ck_assert_ptr_null(strstr(cJSON_GetObjectItem(ev[i],
		    "payload")->valuestring, "jane.doe"));
		xd = cJSON_GetObjectItem(ev[i], "x_death");
		x = cJSON_GetArrayItem(xd, 0);
		ck_assert_str_eq(cJSON_GetObjectItem(x, "reason")->valuestring,
		    "rejected");
		ck_assert_str_eq(cJSON_GetObjectItem(x, "queue")->valuestring,
		    f.rig.q[1]);
		for (j = 0; j < cJSON_GetArraySize(xd); j++) {
			x = cJSON_GetArrayItem(xd, j);
			if (strcmp(cJSON_GetObjectItem(x, "reason")->valuestring,
			    "expired") == 0)
				ck_assert_int_eq(cJSON_GetObjectItem(x,
				    "count")->valueint, 2);
		}
		ck_assert_int_eq(cJSON_GetArraySize(xd), 2);
		ck_assert_ptr_null(strstr(h_jstr(ev[i], "message_id"), "theirs"));
	}
	h_events_free(ev, n);
	/* a DLQ's name for the work queue's: said, nothing published */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.rig.cfg, "inject", "--queue", f.rig.dlq[1], NULL }, NULL, NULL,
	    &err), 1);
	snprintf(want, sizeof(want), "dlqctl: %s is the DLQ of %s: inject into "
	    "the work queue (--queue %s)\n", f.rig.dlq[1], f.rig.q[1],
	    f.rig.q[1]);
	ck_assert_str_eq(err, want);
	free(err);
	/* a slip in its name: the queue meant is named */
	snprintf(want, sizeof(want), "%sx", f.rig.q[1]);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.rig.cfg, "inject", "--queue", want, NULL }, NULL, NULL, &err), 1);
	snprintf(want, sizeof(want), "dlqctl: %sx is not a work queue of the "
	    "topology; did you mean '%s'?\n", f.rig.q[1], f.rig.q[1]);
	ck_assert_str_eq(err, want);
	free(err);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "dead_letter"), 3);
	/* a live service consumes the queue: it would act on demo messages
	 * (send the SMS): refused, nothing published */
	conn = h_connect();
	amqp_basic_consume(conn, 1, amqp_cstring_bytes(f.rig.q[1]),
	    amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
	ck_assert_int_eq(amqp_get_rpc_reply(conn).reply_type,
	    AMQP_RESPONSE_NORMAL);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.rig.cfg, "inject", "--queue", f.rig.q[1], NULL }, NULL, NULL,
	    &err), 1);
	snprintf(want, sizeof(want), "dlqctl: %s has 1 consumer (a live "
	    "service?): they would take the demo messages and act on them; "
	    "inject is for a queue nobody consumes. Nothing was published\n",
	    f.rig.q[1]);
	ck_assert_str_eq(err, want);
	free(err);
	h_close(conn);		/* theirs go back: those two, no more */
	ck_assert(h_wait_count(f.rig.q[1], 2, WAIT_MS));
	ck_assert_int_eq(h_worker_count(&f.rig.w, "dead_letter"), 3);
	h_rig_stop(&f.rig);
}
END_TEST

/* A user who stops inject (^C) while its messages wait in the retry
 * queue: they are rejected as they come back, dead-lettered and archived,
 * not left in the work queue for nobody to take. */
START_TEST(an_interrupted_inject_leaves_nothing_behind)
{
	struct fixture f;
	struct h_worker run;
	char retry[192], *out;
	cJSON **ev;
	int n, i;

	start(&f, 3000, NULL);
	snprintf(retry, sizeof(retry), "%s.retry", f.rig.q[1]);
	h_spawn(&run, "dlqctl", (const char *[]){ "-c", f.rig.cfg, "inject",
	    "--queue", f.rig.q[1], "--count", "3", "--retries", "5", NULL },
	    NULL);
	/* all three failed once: they wait out the 3 s delay */
	ck_assert(h_wait_count(retry, 3, WAIT_MS));
	ck_assert_int_eq(h_worker_signal(&run, SIGINT, WAIT_MS, NULL), 0);
	out = h_slurp(run.log);
	ck_assert_msg(strstr(out, "interrupted: the 3 still on their way are "
	    "rejected as they come back (within 8 s)") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "3 of 3 dead-lettered into") != NULL, "%s",
	    out);
	free(out);
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 3, WAIT_MS));
	ev = h_worker_events(&f.rig.w, "dead_letter", &n);
	ck_assert_int_eq(n, 3);
	/* failed once (twice if the delay ran out before the interrupt
	 * came), not the five times asked */
	for (i = 0; i < n; i++)
		ck_assert_msg(h_jnum(ev[i], "x_retry_count") >= 1 &&
		    h_jnum(ev[i], "x_retry_count") <= 2, "x-retry-count %lld",
		    (long long)h_jnum(ev[i], "x_retry_count"));
	h_events_free(ev, n);
	ck_assert(h_wait_count(f.rig.q[1], 0, WAIT_MS));
	ck_assert(h_wait_count(retry, 0, WAIT_MS));
	h_rig_stop(&f.rig);
}
END_TEST

/* Messages ready in `queue` of `vhost` (rabbitmqctl list_queues); -1 when
 * it is not there. */
static int
vhost_count(const char *vhost, const char *queue)
{
	char *out, *line, *save, *tab;
	int n = -1;

	ck_assert_int_eq(h_broker_ctl((const char *[]){ "list_queues", "-q",
	    "-p", vhost, "name", "messages_ready", NULL }, &out), 0);
	for (line = strtok_r(out, "\n", &save); line != NULL && n == -1;
	    line = strtok_r(NULL, "\n", &save))
		if ((tab = strchr(line, '\t')) != NULL &&
		    (size_t)(tab - line) == strlen(queue) &&
		    strncmp(line, queue, strlen(queue)) == 0)
			n = atoi(tab + 1);
	free(out);
	return n;
}

/* A vhost other than /, its name holding a slash (%2F in the URL), and a
 * user of that vhost only whose password holds what a URL must escape:
 * the topology, the consumers, inject, a replay and the management API's
 * figures all keep to that vhost and log in; / gets none of it, and no
 * log line holds the password, as typed or escaped. */
START_TEST(a_vhost_with_a_slash_is_kept_to)
{
	struct h_rig f;
	static const char pw[] = "p@ss:w/rd%#?";
	static const char pw_url[] = "p%40ss%3Aw%2Frd%25%23%3F";
	char vhost[64], user[64], url[256], more[320], *out, *log;
	const char *host = strchr(h_url(), '@') + 1;	/* and port */
	const cJSON *t, *row = NULL;
	cJSON *j = NULL;
	int64_t deadline;
	int rc, i;
	const char *const setup[][8] = {
		{ "add_vhost", vhost },
		{ "add_user", user, pw },
		{ "set_user_tags", user, "management" },
		{ "set_permissions", "-p", vhost, user, ".*", ".*", ".*" },
	};

	snprintf(vhost, sizeof(vhost), "t%d/eu", (int)getpid());
	snprintf(user, sizeof(user), "vh%d", (int)getpid());
	for (i = 0; i < 4; i++) {
		rc = h_broker_ctl(setup[i], &out);
		ck_assert_msg(rc == 0, "%s: %s", setup[i][0], out);
		free(out);
	}
	snprintf(url, sizeof(url), "amqp://%s:%s@%.*s/t%d%%2Feu", user, pw_url,
	    (int)strcspn(host, "/"), host, (int)getpid());
	snprintf(more, sizeof(more), "management_url = \"%s\";", h_mgmt_url());
	h_set_broker(url, more);
	h_rig_name(&f, "vh", 1);
	h_rig_setup(&f, NULL);
	rc = h_run((const char *[]){ h_bin("dlq-worker"), "-c", f.cfg,
	    "--assert-only", NULL }, NULL, &out);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_ptr_null(strstr(out, "p@ss"));
	ck_assert_ptr_null(strstr(out, pw_url));
	free(out);
	ck_assert_int_eq(vhost_count(vhost, f.dlq[0]), 0);
	ck_assert_int_eq(h_count(f.dlq[0]), -1);
	ck_assert_int_eq(h_count(f.q[0]), -1);
	h_rig_start(&f);

	rc = h_run((const char *[]){ h_bin("dlqctl"), "-c", f.cfg, "inject",
	    "--queue", f.q[0], "--count", "2", "--retries", "0", NULL }, NULL,
	    &out);
	ck_assert_msg(rc == 0 && strstr(out, "2 of 2 dead-lettered") != NULL,
	    "%s", out);
	free(out);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 2, WAIT_MS));
	ck_assert_int_eq(vhost_count(vhost, f.dlq[0]), 0);

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "replay",
	    "1", "--execute", "--reason", "vhost", NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "published"), 1);
	cJSON_Delete(j);
	ck_assert_int_eq(vhost_count(vhost, f.q[0]), 1);
	ck_assert_int_eq(h_count(f.q[0]), -1);

	/* the broker's statistics of the vhost's queue reach the management
	 * API within seconds: inject's 2 messages and the replayed one */
	deadline = h_now_ms() + WAIT_MS;
	for (;;) {
		ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){
		    "stats", NULL }), 0);
		t = cJSON_GetObjectItemCaseSensitive(j, "traffic");
		ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t,
		    "reported")), "%s", h_jstr(t, "why"));
		cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(t,
		    "queues"))
			if (strcmp(h_jstr(row, "queue"), f.q[0]) == 0)
				break;
		ck_assert_ptr_nonnull(row);
		if (h_jnum(row, "published") >= 3 || h_now_ms() >= deadline)
			break;
		cJSON_Delete(j);
		usleep(250000);
	}
	ck_assert_int_eq(h_jnum(row, "dead_lettered"), 2);
	ck_assert_int_eq(h_jnum(row, "published"), 3);
	cJSON_Delete(j);
	h_rig_stop(&f);
	log = h_slurp(f.w.log);
	ck_assert_ptr_nonnull(strstr(log, "\"event\":\"dead_letter\""));
	ck_assert_ptr_null(strstr(log, "p@ss"));
	ck_assert_ptr_null(strstr(log, pw_url));
	free(log);
	h_broker_ctl((const char *[]){ "delete_user", user, NULL }, &out);
	free(out);
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "delete_vhost", vhost,
	    NULL }, &out), 0);
	free(out);
}
END_TEST

START_TEST(the_compose_file_is_valid)
{
	char *out, *worker, *logging;
	int rc;

	rc = h_run((const char *[]){ "/usr/bin/docker-compose", "-f",
	    "docker-compose.yml", "config", "-q", NULL }, NULL, &out);
	ck_assert_msg(rc == 0, "docker-compose config: %s", out);
	free(out);
	/* a flood's log lines must not fill the host's disk: the worker's
	 * log is rotated (as docker-compose reads the file) */
	rc = h_run((const char *[]){ "/usr/bin/docker-compose", "-f",
	    "docker-compose.yml", "config", NULL }, NULL, &out);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(worker = strstr(out, "\n  worker:\n"));
	ck_assert_ptr_nonnull(logging = strstr(worker, "\n    logging:\n"
	    "      driver: json-file\n      options:\n"));
	ck_assert_ptr_nonnull(strstr(logging, "\n        max-size: 50m\n"));
	free(out);
}
END_TEST

/* The replicas' file: two workers on one PostgreSQL archive, each with
 * its log rotated, started once the database answers. */
START_TEST(the_replicas_compose_file_is_valid)
{
	static const char *const workers[] = { "\n  worker-1:\n",
	    "\n  worker-2:\n" };
	char *out, *w, *end;
	int rc, i;

	rc = h_run((const char *[]){ "/usr/bin/docker-compose", "-f",
	    "docker-compose.ha.yml", "config", NULL }, NULL, &out);
	ck_assert_msg(rc == 0, "docker-compose config: %s", out);
	for (i = 0; i < 2; i++) {
		ck_assert_ptr_nonnull(w = strstr(out, workers[i]));
		/* up to the next service */
		end = strstr(w + 1, "\n  w");
		if (end == NULL || end < w)
			end = w + strlen(w);
		ck_assert_msg(strstr(w, "DLQ_ARCHIVE_URL: postgresql://dlq:") !=
		    NULL && strstr(w, "DLQ_ARCHIVE_URL") < end, "%s", w);
		ck_assert_ptr_nonnull(strstr(w, "\n        max-size: 50m\n"));
		ck_assert_ptr_nonnull(strstr(w, "      postgres:\n"
		    "        condition: service_healthy\n"));
	}
	ck_assert_ptr_nonnull(strstr(out, "\n  postgres:\n"));
	ck_assert_ptr_nonnull(strstr(out, "pg_isready"));
	free(out);
}
END_TEST

/* systemd reads the unit without a warning (its programs taken from the
 * build: verify wants them executable). */
START_TEST(the_systemd_unit_is_valid)
{
	char *unit = h_slurp("config/dlq-worker.service"), *out, *p, *q;
	char bin[PATH_MAX], path[PATH_MAX];
	FILE *f;
	int rc;

	ck_assert_ptr_nonnull(unit);
	ck_assert_ptr_nonnull(realpath(h_bin("dlq-worker"), bin));
	*strrchr(bin, '/') = '\0';
	snprintf(path, sizeof(path), "%s", h_tmp_path("dlq-worker.service"));
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	for (p = unit; (q = strstr(p, "/usr/local/bin/")) != NULL; p = q + 15)
		fprintf(f, "%.*s%s/", (int)(q - p), p, bin);
	fputs(p, f);
	fclose(f);
	free(unit);
	rc = h_run((const char *[]){ "/usr/bin/systemd-analyze", "verify",
	    path, NULL }, NULL, &out);
	ck_assert_msg(rc == 0 && *out == '\0', "systemd-analyze: %s", out);
	free(out);
}
END_TEST

/* Whether `word` stands in `text` between blanks or line ends. */
static bool
has_word(const char *text, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = text; (p = strstr(p, word)) != NULL; p += n)
		if ((p == text || isspace((unsigned char)p[-1])) &&
		    (p[n] == '\0' || isspace((unsigned char)p[n]) ||
		    p[n] == '\\'))
			return true;
	return false;
}

/* The image's runtime stage installs the package of every shared
 * library the binaries need (libc6 comes with debian:bookworm-slim;
 * a sanitizer build's runtimes are not what the image ships): a library
 * added to the build and not to the Dockerfile would stop the container
 * at its first start, and no container engine runs here to find out. */
START_TEST(the_image_installs_every_library_the_binaries_need)
{
	static const char script[] =
	    "set -e; for bin in \"$@\"; do"
	    " for lib in $(readelf -d \"$bin\" |"
	    "  sed -n 's/.*Shared library: \\[\\(.*\\)\\]/\\1/p'); do"
	    "  path=$(ldd \"$bin\" | awk -v l=\"$lib\" '$1 == l { print $3 }');"
	    "  dir=${path%/*};"
	    "  dpkg -S \"*/${dir##*/}/$lib\" | sed 's/[:,].*//';"
	    " done; done | sort -u";
	char *out, *dockerfile, *stage, *pkg, *save;
	int rc, n = 0;

	rc = h_run((const char *[]){ "/bin/sh", "-c", script, "sh",
	    h_bin("dlq-worker"), h_bin("dlqctl"), NULL }, NULL, &out);
	ck_assert_msg(rc == 0, "the libraries' packages: %s", out);
	ck_assert_ptr_nonnull(dockerfile = h_slurp("Dockerfile"));
	ck_assert_ptr_nonnull(stage = strstr(dockerfile, "\nFROM "));
	ck_assert_ptr_nonnull(stage = strstr(stage + 1, "\nFROM "));
	for (pkg = strtok_r(out, "\n", &save); pkg != NULL;
	    pkg = strtok_r(NULL, "\n", &save)) {
		if (strcmp(pkg, "libc6") == 0 || strncmp(pkg, "libasan", 7) ==
		    0 || strncmp(pkg, "libubsan", 8) == 0 ||
		    strncmp(pkg, "libtsan", 7) == 0)
			continue;
		ck_assert_msg(has_word(stage, pkg), "the Dockerfile's runtime "
		    "stage does not install %s", pkg);
		n++;
	}
	ck_assert_int_ge(n, 7);	/* rabbitmq-c, curl, cJSON, libconfig, ... */
	free(dockerfile);
	free(out);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("ops");
	TCase *tc = tcase_create("ops");
	TCase *file = tcase_create("sqlite_disk");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, metrics_count_what_happened);
	tcase_add_test(tc, the_oldest_unresolved_age_follows_what_is_resolved);
	tcase_add_test(tc,
	    health_metrics_and_reads_answer_while_the_broker_is_down);
	tcase_add_test(tc, readyz_follows_the_broker);
	tcase_add_test(tc, one_address_cannot_hold_every_http_connection);
	tcase_add_test(tc, an_ipv6_listener_answers_both_families);
	tcase_add_test(tc, a_threshold_alert_fires_once_per_cooldown);
	tcase_add_test(tc, escalations_show_in_stats_metrics_and_once_in_the_digest);
	tcase_add_test(tc, a_flood_past_the_owner_sla_is_announced_once_each);
	tcase_add_test(tc, inject_makes_real_dead_letters);
	tcase_add_test(tc, an_interrupted_inject_leaves_nothing_behind);
	tcase_add_test(tc, a_vhost_with_a_slash_is_kept_to);
	tcase_add_test(tc, the_compose_file_is_valid);
	tcase_add_test(tc, the_replicas_compose_file_is_valid);
	tcase_add_test(tc, the_systemd_unit_is_valid);
	tcase_add_test(tc, the_image_installs_every_library_the_binaries_need);
	suite_add_tcase(s, tc);
	/* a full disk under the SQLite file (a PostgreSQL server's disk is
	 * not the worker's: check_postgres.c freezes the server instead) */
	tcase_set_tags(file, "sqlite");
	tcase_set_timeout(file, 120);
	tcase_add_test(file, readyz_says_when_the_disk_refuses_the_archive);
	suite_add_tcase(s, file);
	return s;
}

DLQ_CHECK_MAIN(suite)
