/* bench.c - make bench: dlq-worker against bare baselines, same run.
 *
 * Every scenario fills DLQs with really dead-lettered messages (published
 * to a filler queue with x-message-ttl=0 whose dead-letter target is the
 * DLQ: the broker writes a real x-death), persistent 512-byte JSON bodies
 * with message_id, correlation_id, timestamp, x-retry-count and an error
 * header. A and B alternate (A B A B ...), medians and min-max printed.
 * It prints, it never asserts: timings are not tests.
 *
 *   A  dlq-worker: archive on (WAL, synchronous=FULL), JSON log to a file,
 *      alerts on to a local receiver
 *   B  baseline: a bare rabbitmq-c consumer that only acks, same prefetch
 *      (in 2, memory: one thread and connection per DLQ, as the worker
 *      has, run as a program of its own: bench --bare-consumers)
 *
 * Scenario 8 times what on-call waits for (dlqctl stats and groups, a
 * /metrics scrape) on an empty archive and on a large one.
 *
 * Scenario 9 drains into a PostgreSQL archive with one and two workers
 * (replicas) beside one worker on SQLite; scenario 11 drains a flood with
 * /metrics scraped every second and without; scenario 1b is 1 at
 * prefetch 1000; scenario 12 times everything that grows with the
 * archive at each size of BENCH_SCALE.
 *
 * Environment: DLQ_TEST_AMQP_URL, BENCH_N (20000), BENCH_ROUNDS (5),
 * BENCH_FLOOD (100000), BENCH_REPLAY_N (2000), BENCH_ARCHIVE_ROWS
 * (500000), DLQ_BENCH_PG_URL (scripts/bench.sh starts a private
 * PostgreSQL server), BENCH_PG_N (100000), BENCH_PG_ROUNDS (2),
 * BENCH_SCALE (10000,100000,1000000: archive sizes; 10000000 adds
 * about 20 minutes and 13 GB of disk), BENCH_SCALE_ROUNDS (3), BENCH_ONLY
 * (drain, drain1000, memory, scaling, alert, replay, archive, queries,
 * replicas, scrapes, scale: the scenarios to run), BENCH_KEEP (keep the
 * run's files), DLQ_BIN (build). */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <dirent.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PREFETCH	200	/* every scenario's, but 1's second run */
static int prefetch = PREFETCH;
#define MAX_Q		200

static const char *url, *bin;
static int env_int(const char *name, int def);
static int drained_idle_ms;	/* > 0: RSS also read this long after a drain */
#define DRAINED_IDLE_MS	2000	/* ... in the memory scenario */
static char dir[128];
static int seq;

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void
die(const char *what)
{
	fprintf(stderr, "bench: %s\n", what);
	exit(1);
}

static amqp_connection_state_t
connect_broker(void)
{
	struct amqp_connection_info ci;
	amqp_connection_state_t c = amqp_new_connection();
	amqp_socket_t *s = amqp_tcp_socket_new(c);
	char *u = strdup(url);

	if (amqp_parse_url(u, &ci) != AMQP_STATUS_OK ||
	    amqp_socket_open(s, ci.host, ci.port) != AMQP_STATUS_OK ||
	    amqp_login(c, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, ci.user,
	    ci.password).reply_type != AMQP_RESPONSE_NORMAL)
		die("cannot connect to the broker (DLQ_TEST_AMQP_URL)");
	amqp_channel_open(c, 1);
	free(u);
	return c;
}

static void
close_broker(amqp_connection_state_t c)
{
	amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
	amqp_connection_close(c, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(c);
}

static int
depth(amqp_connection_state_t c, const char *q)
{
	amqp_queue_declare_ok_t *ok = amqp_queue_declare(c, 1,
	    amqp_cstring_bytes(q), 1, 0, 0, 0, amqp_empty_table);

	return ok ? (int)ok->message_count : -1;
}

/* The topologies made, so the run leaves no queues behind. */
static struct made {
	char	p[32];
	int	k;
} made[32];
static int nmade;

/* A topology of k queues "<p>_q<i>" and a worker config for it. */
static const char *
setup(const char *p, int k, const char *extra)
{
	static char cfg[256];
	char top[256];
	FILE *f;
	int i;

	if (nmade < (int)(sizeof(made) / sizeof(made[0]))) {
		snprintf(made[nmade].p, sizeof(made[nmade].p), "%s", p);
		made[nmade++].k = k;
	}

	snprintf(top, sizeof(top), "%s/%s-topology.conf", dir, p);
	f = fopen(top, "w");
	fprintf(f, "work_exchange = \"%s_x\";\ndead_letter_exchange = "
	    "\"%s_dlx\";\nqueues = (\n", p, p);
	for (i = 0; i < k; i++)
		fprintf(f, "  { name = \"%s_q%d\"; }%s\n", p, i, i + 1 < k ? "," :
		    "");
	fprintf(f, ");\n");
	fclose(f);
	snprintf(cfg, sizeof(cfg), "%s/%s.conf", dir, p);
	f = fopen(cfg, "w");
	fprintf(f, "rabbitmq = { url = \"%s\"; prefetch = %d; };\n"
	    "topology = { file = \"%s\"; };\n", url, prefetch, top);
	if (extra == NULL || strstr(extra, "archive =") == NULL)
		fprintf(f, "archive = { path = \"%s/%s.db\"; };\n", dir, p);
	fprintf(f, "control = { socket = \"%s/%s.sock\"; };\n%s"
	    "replay = { limit = 100000; };\n%s\n", dir, p,
	    extra && strstr(extra, "http =") ? "" :
	    "http = { listen = \"0\"; };\n", extra ? extra : "");
	fclose(f);
	return cfg;
}

/* Deletes the queues and exchanges of every topology made, with their
 * fillers, and the run's directory (BENCH_KEEP=1 keeps the directory). */
static void
cleanup(void)
{
	static const char *const forms[] = { "%s_q%d", "%s_q%d.dlq",
	    "%s_fill%d" };
	amqp_connection_state_t c = connect_broker();
	char name[160], cmd[200];
	int i, j, f;

	for (i = 0; i < nmade; i++) {
		for (j = 0; j < made[i].k; j++)
			for (f = 0; f < 3; f++) {
				snprintf(name, sizeof(name), forms[f], made[i].p, j);
				amqp_queue_delete(c, 1, amqp_cstring_bytes(name), 0, 0);
			}
		snprintf(name, sizeof(name), "%.31s_x", made[i].p);
		amqp_exchange_delete(c, 1, amqp_cstring_bytes(name), 0);
		snprintf(name, sizeof(name), "%.31s_dlx", made[i].p);
		amqp_exchange_delete(c, 1, amqp_cstring_bytes(name), 0);
	}
	close_broker(c);
	if (getenv("BENCH_KEEP") == NULL) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench: could not remove %s\n", dir);
	}
}

static int
run_wait(const char *const *argv)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void
assert_topology(const char *cfg)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/dlq-worker", bin);
	if (run_wait((const char *[]){ path, "-c", cfg, "--assert-only",
	    NULL }) != 0)
		die("topology assert failed");
}

/* Fills the k DLQs of `p` with n dead letters in all (round robin). */
static void
fill(const char *p, int k, int n)
{
	amqp_connection_state_t c = connect_broker();
	amqp_table_entry_t a[3], h[2];
	amqp_table_t at = { 3, a };
	amqp_basic_properties_t props;
	char filler[MAX_Q][160], q[160], dlx[160], id[64], body[513];
	int i, total = 0;

	snprintf(dlx, sizeof(dlx), "%s_dlx", p);
	for (i = 0; i < k; i++) {
		snprintf(filler[i], sizeof(filler[i]), "%s_fill%d", p, i);
		snprintf(q, sizeof(q), "%s_q%d", p, i);
		a[0].key = amqp_cstring_bytes("x-message-ttl");
		a[0].value.kind = AMQP_FIELD_KIND_I64;
		a[0].value.value.i64 = 0;
		a[1].key = amqp_cstring_bytes("x-dead-letter-exchange");
		a[1].value.kind = AMQP_FIELD_KIND_UTF8;
		a[1].value.value.bytes = amqp_cstring_bytes(dlx);
		a[2].key = amqp_cstring_bytes("x-dead-letter-routing-key");
		a[2].value.kind = AMQP_FIELD_KIND_UTF8;
		a[2].value.value.bytes = amqp_cstring_bytes(strdup(q));
		if (amqp_queue_declare(c, 1, amqp_cstring_bytes(filler[i]), 0, 0,
		    0, 1, at) == NULL)
			die("cannot declare a filler queue");
	}
	memset(body, 'x', 512);
	body[512] = '\0';
	for (i = 0; i < n; i++) {
		int len = snprintf(body, sizeof(body), "{\"order\":%d,\"customer\":"
		    "\"c-%d\",\"email\":\"user%d@example.com\",\"pad\":\"", i, i, i);
		memset(body + len, 'p', 510 - (size_t)len);
		memcpy(body + 510, "\"}", 2);
		snprintf(id, sizeof(id), "%s-%d", p, i);
		memset(&props, 0, sizeof(props));
		props._flags = AMQP_BASIC_MESSAGE_ID_FLAG |
		    AMQP_BASIC_CORRELATION_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG |
		    AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_HEADERS_FLAG |
		    AMQP_BASIC_CONTENT_TYPE_FLAG;
		props.message_id = amqp_cstring_bytes(id);
		props.correlation_id = amqp_cstring_bytes(id);
		props.timestamp = (uint64_t)time(NULL);
		props.delivery_mode = 2;
		props.content_type = amqp_cstring_bytes("application/json");
		h[0].key = amqp_cstring_bytes("x-retry-count");
		h[0].value.kind = AMQP_FIELD_KIND_I32;
		h[0].value.value.i32 = 3;
		h[1].key = amqp_cstring_bytes("x-error");
		h[1].value.kind = AMQP_FIELD_KIND_UTF8;
		h[1].value.value.bytes = amqp_cstring_bytes(
		    "upstream timeout after 30000 ms");
		props.headers.num_entries = 2;
		props.headers.entries = h;
		amqp_basic_publish(c, 1, amqp_cstring_bytes(""),
		    amqp_cstring_bytes(filler[i % k]), 0, 0, &props,
		    (amqp_bytes_t){ 512, body });
	}
	for (;;) {	/* until the broker has dead-lettered them all */
		for (i = 0, total = 0; i < k; i++) {
			snprintf(q, sizeof(q), "%s_q%d.dlq", p, i);
			total += depth(c, q);
		}
		if (total >= n)
			break;
		nap_ms(50);
	}
	close_broker(c);
}

struct result {
	double	secs;
	double	cpu_s;		/* user + sys of the consumer */
	double	sys_s;		/* the sys part of it */
	double	broker_cpu_s;
	long	rss_kb;		/* peak */
	long	rss_after_kb;	/* current, DRAINED_IDLE_MS after the drain */
	long	anon_after_kb;	/* of which heap and stacks (RssAnon) */
	long	file_after_kb;	/* and pages of files (RssFile): code */
	double	syscw, wchar;	/* write(2)-family calls and bytes */
	double	syscr;		/* read(2)-family calls (socket and files) */
};

/* Write calls and bytes so far (/proc/PID/io): the log's and the
 * archive's (WAL frames, checkpoints) together. */
static void
proc_io(pid_t pid, struct result *r)
{
	char path[64], line[128];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "syscw: %llu", &v) == 1)
			r->syscw = (double)v;
		else if (sscanf(line, "wchar: %llu", &v) == 1)
			r->wchar = (double)v;
		else if (sscanf(line, "syscr: %llu", &v) == 1)
			r->syscr = (double)v;
	}
	fclose(f);
}

/* User + sys CPU seconds of a process; the sys part in *sys if asked. */
static double
proc_cpu_split(pid_t pid, double *sys)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) == NULL || (p = strrchr(buf, ')')) ==
	    NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
	    "%lu %lu", &ut, &st) != 2)
		ut = st = 0;
	fclose(f);
	if (sys != NULL)
		*sys = (double)st / (double)sysconf(_SC_CLK_TCK);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double
proc_cpu(pid_t pid)
{
	return proc_cpu_split(pid, NULL);
}

/* A "Vm...:" figure of /proc/PID/status, KiB. */
static long
proc_status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			kb = atol(line + n + 1);
			break;
		}
	fclose(f);
	return kb;
}

static long
proc_hwm(pid_t pid)
{
	return proc_status_kb(pid, "VmHWM");
}

static pid_t
broker_pid(void)
{
	char path[128], buf[32];
	const char *colon = strrchr(url, ':');
	FILE *f;

	snprintf(path, sizeof(path), "/var/tmp/dlq-monitor-rabbitmq-%d/"
	    "rabbitmq.pid", colon ? atoi(colon + 1) : 5699);
	if ((f = fopen(path, "r")) == NULL || fgets(buf, sizeof(buf), f) == NULL)
		return 0;
	fclose(f);
	return (pid_t)atoi(buf);
}

/* Counts "dead_letter" lines in a growing log, from where it left off. */
struct tail {
	int	 fd;
	long	 count;
	char	 carry[64];
};

static long
tail_count(struct tail *t, const char *needle)
{
	char buf[65536 + 64];
	size_t keep = strlen(t->carry), nl = strlen(needle);
	ssize_t n;
	char *p;

	while ((n = read(t->fd, buf + keep, 65536)) > 0) {
		memcpy(buf, t->carry, keep);
		buf[keep + (size_t)n] = '\0';
		for (p = buf; (p = strstr(p, needle)) != NULL; p += nl)
			t->count++;
		keep = keep + (size_t)n < nl ? keep + (size_t)n : nl - 1;
		memcpy(t->carry, buf + (size_t)n + strlen(t->carry) - keep, keep);
		t->carry[keep] = '\0';
	}
	return t->count;
}

static pid_t
start_worker(const char *cfg, const char *log, const char *level)
{
	char path[256], env[64];
	pid_t pid;
	int fd;

	snprintf(path, sizeof(path), "%s/dlq-worker", bin);
	snprintf(env, sizeof(env), "DLQ_LOG_LEVEL=%s", level);
	if ((pid = fork()) == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		putenv(env);
		execl(path, path, "-c", cfg, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void
stop_worker(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* Starts the worker and waits until its k consumers have started. */
static pid_t
start_ready(const char *cfg, int k)
{
	struct tail t = { -1, 0, "" };
	char log[256];
	pid_t pid;

	snprintf(log, sizeof(log), "%s/idle-%d.log", dir, ++seq);
	pid = start_worker(cfg, log, "info");
	while ((t.fd = open(log, O_RDONLY)) < 0)
		nap_ms(1);
	while (tail_count(&t, "\"event\":\"consumer_started\"") < k)
		nap_ms(10);
	close(t.fd);
	return pid;
}

/* What the worker's start costs on a config (topology assert, archive
 * open, connections) until its k consumers run, measured on its still
 * empty queues. The drains subtract it: their CPU is per message. */
struct start_cost {
	double	cpu_s, sys_s;
};

static struct start_cost
start_cost(const char *cfg, int k)
{
	struct start_cost c;
	pid_t pid = start_ready(cfg, k);

	c.cpu_s = proc_cpu_split(pid, &c.sys_s);
	stop_worker(pid);
	return c;
}

/* A: the worker drains n dead letters of `p`; its CPU without the start
 * `sc` (NULL: with it). */
static struct result
drain_worker(const char *p, const char *cfg, int n, const char *level,
    const struct start_cost *sc)
{
	struct result r = { 0 };
	struct tail t = { -1, 0, "" };
	char log[256];
	pid_t pid, bp = broker_pid();
	double b0 = proc_cpu(bp);
	int64_t t0 = now_us();

	snprintf(log, sizeof(log), "%s/%s-worker-%d.log", dir, p, ++seq);
	pid = start_worker(cfg, log, level);
	while ((t.fd = open(log, O_RDONLY)) < 0)
		nap_ms(1);
	while (tail_count(&t, "\"event\":\"dead_letter\"") < n) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			die("the worker exited during a drain (see its log)");
		if (now_us() - t0 > 600 * 1000000LL)
			die("a drain took more than 10 minutes");
		nap_ms(2);
	}
	r.secs = (double)(now_us() - t0) / 1e6;
	r.cpu_s = proc_cpu_split(pid, &r.sys_s);
	if (sc != NULL) {
		r.cpu_s = r.cpu_s > sc->cpu_s ? r.cpu_s - sc->cpu_s : 0;
		r.sys_s = r.sys_s > sc->sys_s ? r.sys_s - sc->sys_s : 0;
	}
	r.broker_cpu_s = proc_cpu(bp) - b0;
	r.rss_kb = proc_hwm(pid);
	proc_io(pid, &r);
	if (drained_idle_ms > 0) {
		nap_ms(drained_idle_ms);
		r.rss_after_kb = proc_status_kb(pid, "VmRSS");
		r.anon_after_kb = proc_status_kb(pid, "RssAnon");
		r.file_after_kb = proc_status_kb(pid, "RssFile");
	}
	close(t.fd);
	stop_worker(pid);
	return r;
}

/* B: a bare consumer that only acks, same prefetch; n from one queue. */
static struct result
drain_baseline(const char *dlq, int n)
{
	struct result r = { 0 };
	struct rusage ru;
	pid_t pid, bp = broker_pid();
	double b0 = proc_cpu(bp);
	int64_t t0 = now_us();
	int status;

	if ((pid = fork()) == 0) {
		amqp_connection_state_t c = connect_broker();
		amqp_envelope_t env;
		int got = 0;

		amqp_basic_qos(c, 1, 0, (uint16_t)prefetch, 0);
		amqp_basic_consume(c, 1, amqp_cstring_bytes(dlq), amqp_empty_bytes,
		    0, 0, 0, amqp_empty_table);
		while (got < n) {
			amqp_maybe_release_buffers(c);
			if (amqp_consume_message(c, &env, NULL, 0).reply_type !=
			    AMQP_RESPONSE_NORMAL)
				_exit(1);
			amqp_basic_ack(c, 1, env.delivery_tag, 0);
			amqp_destroy_envelope(&env);
			got++;
		}
		close_broker(c);
		_exit(0);
	}
	wait4(pid, &status, 0, &ru);
	r.secs = (double)(now_us() - t0) / 1e6;
	r.cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	r.sys_s = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	r.broker_cpu_s = proc_cpu(bp) - b0;
	r.rss_kb = ru.ru_maxrss;
	return r;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorts it). */
static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* "median (min–max)" of v[0..n) */
static const char *
summ(double *v, int n, const char *fmt, char *out, size_t len)
{
	char a[32], b[32], c[32];

	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	snprintf(a, sizeof(a), fmt, v[n / 2]);
	snprintf(b, sizeof(b), fmt, v[0]);
	snprintf(c, sizeof(c), fmt, v[n - 1]);
	snprintf(out, len, "%s (%s–%s)", a, b, c);
	return out;
}

static FILE *md;

static void
say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	vfprintf(md, fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* --- a webhook receiver that only notes when the first POST arrived --- */

static int rx_fd;
static volatile int64_t rx_first_ms;
static volatile int rx_posts;

static void *
receiver(void *arg)
{
	char buf[65536];
	int c;

	(void)arg;
	for (;;) {
		if ((c = accept(rx_fd, NULL, NULL)) < 0)
			continue;
		if (read(c, buf, sizeof(buf)) > 0) {
			if (rx_first_ms == 0)
				rx_first_ms = wall_ms();
			rx_posts++;
		}
		nap_ms(5);	/* let the body arrive; we do not parse it */
		while (recv(c, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
		if (write(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
		    "Connection: close\r\n\r\n", 57) < 0)
			perror("receiver");
		close(c);
	}
	return NULL;
}

static int
start_receiver(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	pthread_t t;

	rx_fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(rx_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(rx_fd, 16) != 0)
		die("receiver");
	getsockname(rx_fd, (struct sockaddr *)&a, &len);
	pthread_create(&t, NULL, receiver, NULL);
	pthread_detach(t);
	return ntohs(a.sin_port);
}

/* --- scenarios --- */

static int N, ROUNDS, FLOOD, REPLAY_N, ARCHIVE_ROWS, rx_port;

static const char *
alert_conf(int cooldown_ms)
{
	static char s[256];

	snprintf(s, sizeof(s), "alert = { webhook_url = \"http://127.0.0.1:%d/"
	    "hook\"; cooldown_ms = %d; };", rx_port, cooldown_ms);
	return s;
}

/* A table row "| label | A | B |" of medians (min–max); b NULL: "–". */
static void
say_row(const char *label, const char *fmt, double *a, double *b)
{
	char s1[128], s2[128] = "–";

	summ(a, ROUNDS, fmt, s1, sizeof(s1));
	if (b != NULL)
		summ(b, ROUNDS, fmt, s2, sizeof(s2));
	say("| %s | %s | %s |\n", label, s1, s2);
}

/* archive_committed lines of a worker log: batch sizes and latencies */
static void
commit_stats(const char *log, double *lat, int *nlat, double *batch_sum)
{
	char line[1024];
	FILE *f = fopen(log, "r");
	const char *b, *u;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "\"archive_committed\"") == NULL ||
		    (b = strstr(line, "\"batch\":")) == NULL ||
		    (u = strstr(line, "\"us\":")) == NULL || *nlat >= 100000)
			continue;
		*batch_sum += atof(b + 8);
		lat[(*nlat)++] = atof(u + 5) / 1000.0;
	}
	if (f != NULL)
		fclose(f);
}

/* 1 at prefetch `pf` (both sides); the archive's commits (6) are
 * reported from the first run only. */
static void
scenario_drain(int pf, const char *section)
{
	double a_rate[16], b_rate[16], a_cpu[16], b_cpu[16], a_bro[16], b_bro[16];
	double ratio[16], cpu_ratio[16], bsum = 0;
	double *lat = malloc(100000 * sizeof(double));
	double a_syscw[16], a_wkib[16], a_sys[16], b_sys[16], a_start[16];
	char p[32], dlq[64], log[256], s1[128];
	struct result a, b;
	struct start_cost sc;
	const char *cfg;
	int r, nlat = 0, seq_before;

	prefetch = pf;
	say("\n## %s. Drain rate and CPU, N = %d, %d rounds, A B alternating, "
	    "prefetch %d\n\n", section, N, ROUNDS, pf);
	for (r = 0; r < ROUNDS; r++) {
		snprintf(p, sizeof(p), "bA%d_%d", r, (int)getpid());
		cfg = setup(p, 1, alert_conf(300000));
		assert_topology(cfg);
		sc = start_cost(cfg, 1);
		a_start[r] = sc.cpu_s * 1e3;
		fill(p, 1, N);
		seq_before = seq;
		a = drain_worker(p, cfg, N, "debug", &sc);
		snprintf(log, sizeof(log), "%s/%s-worker-%d.log", dir, p,
		    seq_before + 1);
		commit_stats(log, lat, &nlat, &bsum);
		snprintf(p, sizeof(p), "bB%d_%d", r, (int)getpid());
		cfg = setup(p, 1, NULL);
		assert_topology(cfg);
		fill(p, 1, N);
		snprintf(dlq, sizeof(dlq), "%s_q0.dlq", p);
		b = drain_baseline(dlq, N);
		a_rate[r] = N / a.secs;
		b_rate[r] = N / b.secs;
		ratio[r] = a_rate[r] / b_rate[r];
		a_cpu[r] = a.cpu_s * 1e6 / N;
		b_cpu[r] = b.cpu_s * 1e6 / N;
		cpu_ratio[r] = a_cpu[r] / b_cpu[r];
		a_sys[r] = a.sys_s * 1e6 / N;
		b_sys[r] = b.sys_s * 1e6 / N;
		a_bro[r] = a.broker_cpu_s * 1e6 / N;
		b_bro[r] = b.broker_cpu_s * 1e6 / N;
		a_syscw[r] = a.syscw / N;
		a_wkib[r] = a.wchar / 1024.0 / N;
		printf("  round %d: worker %.0f msg/s, baseline %.0f msg/s\n", r + 1,
		    a_rate[r], b_rate[r]);
	}
	say("| | A: dlq-worker | B: bare consumer |\n|---|---|---|\n");
	say_row("drain rate, msg/s", "%.0f", a_rate, b_rate);
	say_row("CPU per message, µs (user+sys)", "%.1f", a_cpu, b_cpu);
	say_row("of which in the kernel (sys), µs", "%.1f", a_sys, b_sys);
	say_row("broker CPU per message, µs", "%.1f", a_bro, b_bro);
	say_row("write calls per message (log, WAL, checkpoints)", "%.2f",
	    a_syscw, NULL);
	say_row("KiB written per message", "%.1f", a_wkib, NULL);
	say("\nThe worker's CPU is without its start (topology assert, archive "
	    "open, connection: %s ms, measured on the empty queues just before "
	    "each fill).\n", summ(a_start, ROUNDS, "%.0f", s1, sizeof(s1)));
	say("\nratio A/B of drain rate: %s (goal ≥ 0.9)\n",
	    summ(ratio, ROUNDS, "%.2f", s1, sizeof(s1)));
	say("\nratio A/B of CPU per message, round by round: %s (the VM's "
	    "speed varies over the day and moves both; the ratio moves "
	    "less)\n", summ(cpu_ratio, ROUNDS, "%.2f", s1, sizeof(s1)));
	say("\nworker CPU per dead letter: %s µs (goal ≤ 20, everything on: "
	    "archive, redaction, JSON log, alerts)\n",
	    summ(a_cpu, ROUNDS, "%.1f", s1, sizeof(s1)));
	prefetch = PREFETCH;
	if (nlat > 0 && pf == PREFETCH) {
		qsort(lat, (size_t)nlat, sizeof(*lat), cmp_double);
		say("\n## 6. Archive commits during the drains\n\n"
		    "%d commits, mean batch %.1f deliveries, latency p50 %.2f ms, "
		    "p99 %.2f ms, max %.2f ms\n", nlat, bsum / nlat,
		    lat[nlat / 2], lat[nlat * 99 / 100], lat[nlat - 1]);
	}
	free(lat);
}

/* The peak RSS of a worker idle for a second, and its current RssAnon
 * and RssFile (KiB). */
static long
idle_rss(const char *cfg, int k, long *anon_kb, long *file_kb)
{
	pid_t pid = start_ready(cfg, k);
	long kb;

	nap_ms(1000);
	kb = proc_hwm(pid);
	*anon_kb = proc_status_kb(pid, "RssAnon");
	*file_kb = proc_status_kb(pid, "RssFile");
	stop_worker(pid);
	return kb;
}

/* The memory baseline: a bare consumer of the k DLQs of `p`, shaped
 * like the worker (a thread with its own connection per DLQ, 256 KiB
 * stacks, same prefetch), that only acks; n dead letters in all (0:
 * idle for a second once every consumer runs). It runs as a fresh
 * program (the bench re-executed), so its RSS is its own, and prints
 * "peak-KiB rss-KiB anon-KiB file-KiB", the last three drained_ms after
 * the last ack. */
struct bare_queue {
	char	dlq[160];
	int	n;
	pthread_barrier_t *ready;
};

static void *
bare_consume(void *arg)
{
	struct bare_queue *q = arg;
	amqp_connection_state_t c = connect_broker();
	amqp_envelope_t env;
	int got;

	amqp_basic_qos(c, 1, 0, (uint16_t)prefetch, 0);
	amqp_basic_consume(c, 1, amqp_cstring_bytes(q->dlq), amqp_empty_bytes,
	    0, 0, 0, amqp_empty_table);
	pthread_barrier_wait(q->ready);
	for (got = 0; got < q->n; got++) {
		amqp_maybe_release_buffers(c);
		if (amqp_consume_message(c, &env, NULL, 0).reply_type !=
		    AMQP_RESPONSE_NORMAL)
			die("the bare consumer lost its connection");
		amqp_basic_ack(c, 1, env.delivery_tag, 0);
		amqp_destroy_envelope(&env);
	}
	pthread_barrier_wait(q->ready);	/* all drained: read the RSS */
	pthread_barrier_wait(q->ready);	/* ... then close */
	close_broker(c);
	return NULL;
}

static int
bare_consumers_main(const char *p, int k, int n, int drained_ms)
{
	struct bare_queue *qs = calloc((size_t)k, sizeof(*qs));
	pthread_t *ts = calloc((size_t)k, sizeof(*ts));
	pthread_barrier_t ready;
	pthread_attr_t attr;
	long peak;
	int i;

	pthread_barrier_init(&ready, NULL, (unsigned)k + 1);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (i = 0; i < k; i++) {
		snprintf(qs[i].dlq, sizeof(qs[i].dlq), "%s_q%d.dlq", p, i);
		qs[i].n = n / k + (i < n % k);	/* as fill() spread them */
		qs[i].ready = &ready;
		if (pthread_create(&ts[i], &attr, bare_consume, &qs[i]) != 0)
			die("cannot start a bare consumer thread");
	}
	pthread_barrier_wait(&ready);	/* every consumer runs */
	if (n == 0)
		nap_ms(1000);
	pthread_barrier_wait(&ready);	/* every dead letter acked */
	peak = proc_hwm(getpid());
	nap_ms(drained_ms);
	printf("%ld %ld %ld %ld\n", peak, proc_status_kb(getpid(), "VmRSS"),
	    proc_status_kb(getpid(), "RssAnon"),
	    proc_status_kb(getpid(), "RssFile"));
	pthread_barrier_wait(&ready);
	for (i = 0; i < k; i++)
		pthread_join(ts[i], NULL);
	pthread_attr_destroy(&attr);
	pthread_barrier_destroy(&ready);
	free(qs);
	free(ts);
	return 0;
}

/* Runs bare_consumers_main() as its own program; its figures in `r`. */
static void
drain_bare_consumers(const char *p, int k, int n, struct result *r)
{
	char ks[16], ns[16], ms[16], line[128];
	int fd[2], status;
	int64_t t0 = now_us();
	FILE *f;
	pid_t pid;

	snprintf(ks, sizeof(ks), "%d", k);
	snprintf(ns, sizeof(ns), "%d", n);
	snprintf(ms, sizeof(ms), "%d", n > 0 ? DRAINED_IDLE_MS : 0);
	if (pipe(fd) != 0)
		die("pipe");
	if ((pid = fork()) == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		execl("/proc/self/exe", "bench", "--bare-consumers", p, ks, ns,
		    ms, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	memset(r, 0, sizeof(*r));
	if (f == NULL || fgets(line, sizeof(line), f) == NULL ||
	    sscanf(line, "%ld %ld %ld %ld", &r->rss_kb, &r->rss_after_kb,
	    &r->anon_after_kb, &r->file_after_kb) != 4)
		die("the bare consumers failed");
	r->secs = (double)(now_us() - t0) / 1e6 - (n > 0 ? DRAINED_IDLE_MS /
	    1000.0 : 0);
	fclose(f);
	waitpid(pid, &status, 0);
}

static void
scenario_memory(void)
{
	char p[32];
	const char *cfg;
	struct result a, b_idle, b;
	long idle, anon, file;

	say("\n## 2. Memory, 37 monitored DLQs (peak RSS, VmHWM)\n\n");
	snprintf(p, sizeof(p), "bM_%d", (int)getpid());
	cfg = setup(p, 37, alert_conf(300000));
	assert_topology(cfg);
	idle = idle_rss(cfg, 37, &anon, &file);
	fill(p, 37, FLOOD);
	drained_idle_ms = DRAINED_IDLE_MS;
	a = drain_worker(p, cfg, FLOOD, "info", NULL);
	drained_idle_ms = 0;
	drain_bare_consumers(p, 37, 0, &b_idle);
	fill(p, 37, FLOOD);
	drain_bare_consumers(p, 37, FLOOD, &b);
	say("| | A: dlq-worker | B: bare consumers (a thread and connection "
	    "per DLQ, acks only) |\n|---|---|---|\n"
	    "| peak RSS, idle | %.1f MiB | %.1f MiB |\n"
	    "| peak RSS, during a flood of %d dead letters | %.1f MiB | "
	    "%.1f MiB |\n"
	    "| RSS %d s after the flood was drained | %.1f MiB | %.1f MiB |\n"
	    "| of which heap and stacks (RssAnon) | %.1f MiB | %.1f MiB |\n"
	    "| and pages of the program and its libraries (RssFile) | "
	    "%.1f MiB | %.1f MiB |\n"
	    "| drain rate of the flood, msg/s | %.0f | %.0f |\n\n"
	    "goal: under 16 MiB idle, during and after the flood\n\n"
	    "RssFile is shared and clean (the kernel may take it back). "
	    "Idle, the worker's RssAnon is %.1f MiB and its RssFile %.1f MiB.\n",
	    idle / 1024.0, b_idle.rss_kb / 1024.0, FLOOD, a.rss_kb / 1024.0,
	    b.rss_kb / 1024.0, DRAINED_IDLE_MS / 1000, a.rss_after_kb / 1024.0,
	    b.rss_after_kb / 1024.0, a.anon_after_kb / 1024.0,
	    b.anon_after_kb / 1024.0, a.file_after_kb / 1024.0,
	    b.file_after_kb / 1024.0, FLOOD / a.secs, FLOOD / b.secs,
	    anon / 1024.0, file / 1024.0);
}

static void
scenario_scaling(void)
{
	static const int ks[] = { 1, 37, 200 };
	char p[32];
	const char *cfg;
	struct result a;
	struct start_cost sc;
	size_t i;

	say("\n## 3. Scaling: same N = %d over 1, 37 and 200 DLQs\n\n"
	    "| DLQs | drain rate, msg/s | CPU µs/msg | start-up CPU, ms "
	    "(not in µs/msg) | peak RSS |\n|---|---|---|---|---|\n", N);
	for (i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		snprintf(p, sizeof(p), "bS%d_%d", ks[i], (int)getpid());
		cfg = setup(p, ks[i], alert_conf(300000));
		assert_topology(cfg);
		sc = start_cost(cfg, ks[i]);
		fill(p, ks[i], N);
		a = drain_worker(p, cfg, N, "info", &sc);
		say("| %d | %.0f | %.1f | %.0f | %.1f MiB |\n", ks[i],
		    N / a.secs, a.cpu_s * 1e6 / N, sc.cpu_s * 1e3,
		    a.rss_kb / 1024.0);
	}
}

/* Publishes one message to the TTL-0 filler of `p`: dead at once. */
static void
kill_one(const char *p)
{
	amqp_connection_state_t c = connect_broker();
	char filler[96];

	snprintf(filler, sizeof(filler), "%s_fill0", p);
	amqp_basic_publish(c, 1, amqp_cstring_bytes(""),
	    amqp_cstring_bytes(filler), 0, 0, NULL, amqp_cstring_bytes("{}"));
	close_broker(c);
}

static void
scenario_alert_latency(void)
{
	double lat[8];
	struct tail t = { -1, 0, "" };
	char p[32], log[256], s1[128];
	const char *cfg;
	int64_t t0;
	pid_t pid;
	int i, n = 5;

	say("\n## 4. Alert latency: first dead letter after a quiet period to the "
	    "digest POST\n\n");
	snprintf(p, sizeof(p), "bL_%d", (int)getpid());
	cfg = setup(p, 1, alert_conf(1000));
	assert_topology(cfg);
	fill(p, 1, 1);		/* declares the filler; one to start with */
	snprintf(log, sizeof(log), "%s/latency-%d.log", dir, ++seq);
	pid = start_worker(cfg, log, "info");
	while ((t.fd = open(log, O_RDONLY)) < 0)
		nap_ms(1);
	while (tail_count(&t, "\"event\":\"alert_sent\"") < 1)
		nap_ms(10);
	for (i = 0; i < n; i++) {
		nap_ms(1500);		/* quiet: longer than the cooldown */
		rx_first_ms = 0;
		t0 = wall_ms();
		kill_one(p);
		while (rx_first_ms == 0)
			nap_ms(1);
		lat[i] = (double)(rx_first_ms - t0);
	}
	close(t.fd);
	stop_worker(pid);
	say("median (min–max) over %d: %s ms (goal under 1000 ms)\n", n,
	    summ(lat, n, "%.0f", s1, sizeof(s1)));
}

/* B of the replay scenario: the strongest simple publisher of what a
 * replay sends: persistent, 512 bytes, a message id and headers, into a
 * durable queue (the broker writes it to disk before it confirms, as it
 * does for the replay's target), mandatory, with publisher confirms
 * awaited per window of `window` messages (1: each one before the next,
 * the old baseline, kept as a footnote). */
static double
confirmed_publisher(const char *queue, int n, int window)
{
	amqp_connection_state_t c = connect_broker();
	amqp_basic_properties_t props;
	amqp_table_entry_t h[2];
	amqp_frame_t f;
	amqp_basic_ack_t *ack;
	char body[513], id[64];
	uint64_t acked = 0;
	int64_t t0;
	int i, k;

	amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0,
	    amqp_empty_table);
	amqp_confirm_select(c, 1);
	memset(body, 'p', 512);
	body[512] = '\0';
	memset(&props, 0, sizeof(props));
	props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
	    AMQP_BASIC_HEADERS_FLAG;
	props.delivery_mode = 2;
	h[0].key = amqp_cstring_bytes("x-retry-count");
	h[0].value.kind = AMQP_FIELD_KIND_I32;
	h[0].value.value.i32 = 3;
	h[1].key = amqp_cstring_bytes("x-replay-reason");
	h[1].value.kind = AMQP_FIELD_KIND_UTF8;
	h[1].value.value.bytes = amqp_cstring_bytes("bench");
	props.headers.num_entries = 2;
	props.headers.entries = h;
	t0 = now_us();
	for (i = 0; i < n; ) {
		for (k = 0; k < window && i < n; k++, i++) {
			snprintf(id, sizeof(id), "baseline-%d", i);
			props.message_id = amqp_cstring_bytes(id);
			if (amqp_basic_publish(c, 1, amqp_cstring_bytes(""),
			    amqp_cstring_bytes(queue), 1, 0, &props,
			    (amqp_bytes_t){ 512, body }) != AMQP_STATUS_OK)
				die("baseline publisher lost the broker");
		}
		/* every confirm of the window (an ack may cover several) */
		while (acked < (uint64_t)i) {
			if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK)
				die("baseline publisher lost the broker");
			if (f.frame_type != AMQP_FRAME_METHOD)
				continue;
			if (f.payload.method.id == AMQP_BASIC_NACK_METHOD ||
			    f.payload.method.id == AMQP_BASIC_RETURN_METHOD)
				die("the broker refused a baseline message");
			if (f.payload.method.id != AMQP_BASIC_ACK_METHOD)
				continue;
			/* in order on one channel: the highest tag so far */
			ack = f.payload.method.decoded;
			if (ack->delivery_tag > acked)
				acked = ack->delivery_tag;
		}
	}
	t0 = now_us() - t0;
	amqp_queue_delete(c, 1, amqp_cstring_bytes(queue), 0, 0);
	close_broker(c);
	return n / ((double)t0 / 1e6);
}

static void
scenario_replay(void)
{
	double a[16], b[16], one[16], ratio[16];
	char p[32], q[64], rk[64], s1[128], s2[128], s3[128], s4[128], path[256];
	char reason[] = "bench", limit[16];
	struct tail t = { -1, 0, "" };
	char log[256];
	const char *cfg;
	int64_t t0;
	pid_t pid;
	int r;

	say("\n## 5. Replay rate: %d archived dead letters, --rate 0, confirmed\n\n",
	    REPLAY_N);
	snprintf(path, sizeof(path), "%s/dlqctl", bin);
	for (r = 0; r < ROUNDS; r++) {
		snprintf(p, sizeof(p), "bR%d_%d", r, (int)getpid());
		cfg = setup(p, 1, NULL);
		assert_topology(cfg);
		fill(p, 1, REPLAY_N);
		snprintf(log, sizeof(log), "%s/replay-%d.log", dir, ++seq);
		pid = start_worker(cfg, log, "info");
		while ((t.fd = open(log, O_RDONLY)) < 0)
			nap_ms(1);
		t.count = 0;
		t.carry[0] = '\0';
		while (tail_count(&t, "\"event\":\"dead_letter\"") < REPLAY_N)
			nap_ms(5);
		close(t.fd);
		/* select by DLQ (the dead letters died in the filler queue)
		 * and send them to the work queue, which nobody consumes */
		snprintf(q, sizeof(q), "%s_q0.dlq", p);
		snprintf(rk, sizeof(rk), "%s_q0", p);
		snprintf(limit, sizeof(limit), "%d", REPLAY_N);
		t0 = now_us();
		if (run_wait((const char *[]){ path, "-c", cfg, "replay", "--queue",
		    q, "--limit", limit, "--rate", "0", "--to-exchange", "",
		    "--routing-key", rk, "--force", "--execute", "--reason", reason,
		    NULL }) != 0) {	/* its figure would be of nothing */
			stop_worker(pid);
			die("dlqctl replay failed: no replay rate to report");
		}
		a[r] = REPLAY_N / ((double)(now_us() - t0) / 1e6);
		stop_worker(pid);
		snprintf(q, sizeof(q), "%s_baseline", p);
		b[r] = confirmed_publisher(q, REPLAY_N, 1000);
		one[r] = confirmed_publisher(q, REPLAY_N, 1);
		ratio[r] = a[r] / b[r];
		printf("  round %d: replay %.0f msg/s, windowed confirmed "
		    "publisher %.0f msg/s (one at a time %.0f)\n", r + 1, a[r],
		    b[r], one[r]);
	}
	say("| | A: dlqctl replay --execute --rate 0 | B: bare publisher, "
	    "mandatory, confirms awaited per window of 1000 |\n|---|---|---|\n"
	    "| msg/s | %s | %s |\n\nratio A/B: %s (goal ≥ 0.8)\n\n"
	    "(footnote: the same publisher awaiting each confirm before the "
	    "next: %s msg/s)\n",
	    summ(a, ROUNDS, "%.0f", s1, sizeof(s1)),
	    summ(b, ROUNDS, "%.0f", s2, sizeof(s2)),
	    summ(ratio, ROUNDS, "%.2f", s3, sizeof(s3)),
	    summ(one, ROUNDS, "%.0f", s4, sizeof(s4)));
}

/* Runs `sql` on the archive of `p`, once the worker has made it (so the
 * schema is its own). */
static void
prefill(const char *p, const char *cfg, const char *sql)
{
	char path[256];
	sqlite3 *db;

	stop_worker(start_ready(cfg, 1));
	snprintf(path, sizeof(path), "%s/%s.db", dir, p);
	/* records written around the worker, without a journal (it is
	 * stopped; a crash of the bench loses only its own archive), then
	 * back to WAL: its tallies are counted again at its next start */
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous ="
	    " OFF", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL) !=
	    SQLITE_OK ||
	    sqlite3_exec(db, "DELETE FROM archive_meta WHERE key = 'tallies'",
	    NULL, NULL, NULL) != SQLITE_OK)
		die("cannot prefill the archive");
	sqlite3_close(db);
}

/* Records of earlier incidents in the archive of `p`: `rows` of them,
 * resolved, with random fingerprints (as archives written before schema
 * 5 have; later ones begin with their death time). Their payloads are left out: new
 * records go after them whatever their size; the indexes are what a
 * long-lived archive makes larger. */
static void
prefill_archive(const char *p, const char *cfg, int rows)
{
	char sql[1024];

	snprintf(sql, sizeof(sql), "BEGIN; WITH RECURSIVE c(x) AS (SELECT 1"
	    " UNION ALL SELECT x + 1 FROM c WHERE x < %d) INSERT INTO"
	    " dead_letters (fingerprint, dlq, queue, reason, class, signature,"
	    " payload_bytes, received_at, status) SELECT randomblob(32),"
	    " 'earlier.dlq', 'earlier', 'rejected', 'transient',"
	    " printf('%%012x', x %% 1000), 0, x, 'resolved' FROM c; COMMIT;"
	    " PRAGMA wal_checkpoint(TRUNCATE);", rows);
	prefill(p, cfg, sql);
}

/* 7: the drain of scenario 1 into an empty archive and into one that
 * already holds ARCHIVE_ROWS records, alternating. */
static void
scenario_archive_size(void)
{
	double rate[2][16], cpu[2][16], sys[2][16], wc[2][16], wk[2][16];
	double rc[2][16];
	char p[32];
	const char *cfg;
	struct result x;
	struct start_cost sc;
	int r, k;

	say("\n## 7. Drain into an empty archive and into one holding %d "
	    "records, N = %d, %d rounds\n\n", ARCHIVE_ROWS, N, ROUNDS);
	for (r = 0; r < ROUNDS; r++)
		for (k = 0; k < 2; k++) {
			snprintf(p, sizeof(p), "b%c%d_%d", k ? 'H' : 'E', r,
			    (int)getpid());
			cfg = setup(p, 1, alert_conf(300000));
			assert_topology(cfg);
			if (k == 1)
				prefill_archive(p, cfg, ARCHIVE_ROWS);
			sc = start_cost(cfg, 1);
			fill(p, 1, N);
			x = drain_worker(p, cfg, N, "info", &sc);
			rate[k][r] = N / x.secs;
			cpu[k][r] = x.cpu_s * 1e6 / N;
			sys[k][r] = x.sys_s * 1e6 / N;
			wc[k][r] = x.syscw / N;
			wk[k][r] = x.wchar / 1024.0 / N;
			rc[k][r] = x.syscr / N;
			printf("  round %d, %s archive: %.0f msg/s\n", r + 1,
			    k ? "full" : "empty", rate[k][r]);
		}
	say("| | empty archive | %d records |\n|---|---|---|\n", ARCHIVE_ROWS);
	say_row("drain rate, msg/s", "%.0f", rate[0], rate[1]);
	say_row("CPU per message, µs (user+sys)", "%.1f", cpu[0], cpu[1]);
	say_row("of which in the kernel (sys), µs", "%.1f", sys[0], sys[1]);
	say_row("read calls per message (socket, archive pages)", "%.2f",
	    rc[0], rc[1]);
	say_row("write calls per message", "%.2f", wc[0], wc[1]);
	say_row("KiB written per message", "%.1f", wk[0], wk[1]);
}

/* What prefill_cases writes besides the records' columns. */
enum {
	CASES_ALL_OPEN	= 1,	/* every record open: an outage */
	CASES_PAYLOADS	= 2,	/* 512-byte payloads and an x-death */
};

/* An archive after months of incidents: `rows` records over 30 days in
 * 35 queues, 57 failure signatures each, 2 % still open (all with
 * CASES_ALL_OPEN), 1 % assigned along the way, the rest replayed or
 * discarded; and its audit: rows / 10 requests naming 100 records each
 * (replays, drops, redrive claims), so that each record is named by 10
 * of them. */
static void
prefill_cases(const char *p, const char *cfg, int rows, int what)
{
	char sql[4096];

	snprintf(sql, sizeof(sql), "BEGIN; WITH RECURSIVE c(x) AS (SELECT 1"
	    " UNION ALL SELECT x + 1 FROM c WHERE x < %d) INSERT INTO"
	    " dead_letters (fingerprint, dlq, queue, reason, class, signature,"
	    " error, message_id, payload_bytes, received_at, status,"
	    " assigned_at, payload, x_death) SELECT randomblob(32), 'old_q' ||"
	    " (x %% 35) || '.dlq',"
	    " 'old_q' || (x %% 35), 'rejected', 'transient',"
	    " printf('%%06x%%06x', x %% 35, (x / 35) %% 57), 'timeout', 'm-' || x,"
	    " 512, %lld - (%d - x) * (2592000000 / %d),"
	    " CASE WHEN x %% 50 = 0 OR %d THEN 'open' WHEN x %% 2 = 0 THEN"
	    " 'replayed' ELSE 'discarded' END, CASE WHEN x %% 100 = 1 AND NOT %d"
	    " THEN %lld - (%d - x) * (2592000000 / %d) + 600000 END,"
	    " CASE WHEN %d THEN randomblob(512) END, CASE WHEN %d THEN"
	    " '[{\"count\":1,\"reason\":\"rejected\",\"queue\":\"old_q' ||"
	    " (x %% 35) || '\",\"time\":' || (%lld / 1000 - (%d - x) * 2592000 /"
	    " %d) || ',\"exchange\":\"orders\",\"routing-keys\":[\"old_q' ||"
	    " (x %% 35) || '\"]}]' END FROM c;"
	    " WITH RECURSIVE a(y) AS (SELECT 0 UNION ALL SELECT y + 1 FROM a"
	    " WHERE y < %d / 10 - 1) INSERT INTO audit (at, actor, uid,"
	    " command, args, result) SELECT %lld - (%d / 10 - y) * 5000, 'oncall',"
	    " 1000, 'replay_claim', (SELECT json_object('reason', 'provider back',"
	    " 'ids', json_group_array((y * 100 + k) %% %d + 1)) FROM"
	    " (WITH RECURSIVE b(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM b"
	    " WHERE k < 99) SELECT k FROM b)), 'ok' FROM a; COMMIT;",
	    rows, (long long)wall_ms(), rows, rows, what & CASES_ALL_OPEN,
	    what & CASES_ALL_OPEN, (long long)wall_ms(), rows, rows,
	    what & CASES_PAYLOADS, what & CASES_PAYLOADS, (long long)wall_ms(),
	    rows, rows, rows, (long long)wall_ms(), rows, rows);
	prefill(p, cfg, sql);
}

/* GET /metrics from the worker on `port`; the body's size, -1 on error. */
static long
scrape(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	char buf[65536];
	long total = 0;
	ssize_t n;
	int fd;

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
		close(fd);
		return -1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	close(fd);
	return total;
}

/* A thread that scrapes /metrics on `port` once a second until told to
 * stop: Prometheus during an outage. */
struct scraper {
	int		 port;
	volatile int	 stop;
	int		 scrapes;
};

static void *
scrape_every_second(void *arg)
{
	struct scraper *s = arg;
	int64_t next = now_us();

	while (!s->stop) {
		if (now_us() >= next) {
			if (scrape(s->port) > 0)
				s->scrapes++;
			next += 1000000;
		}
		nap_ms(10);
	}
	return NULL;
}

/* 11 (issue 64): a flood drained with /metrics scraped every second and
 * without, A and B alternating; the difference should be noise. */
static void
scenario_scrapes(void)
{
	double a[16], b[16], ca[16], cb[16];
	char p[32], extra[96], s1[128], s2[128], s3[128], s4[128];
	struct scraper sc;
	struct result res;
	pthread_t t;
	const char *cfg;
	int port = 9900 + (int)(getpid() % 90), r, k;

	say("\n## 11. A flood of %d drained with a /metrics scrape every second "
	    "and without, %d rounds\n\n", FLOOD, ROUNDS);
	snprintf(extra, sizeof(extra), "http = { listen = \"127.0.0.1:%d\"; };",
	    port);
	for (r = 0; r < ROUNDS; r++)
		for (k = 0; k < 2; k++) {
			snprintf(p, sizeof(p), "bS%d%c_%d", r, k ? 'B' : 'A',
			    (int)getpid());
			cfg = setup(p, 1, extra);
			assert_topology(cfg);
			fill(p, 1, FLOOD);
			memset(&sc, 0, sizeof(sc));
			sc.port = port;
			if (k == 0)
				pthread_create(&t, NULL, scrape_every_second, &sc);
			res = drain_worker(p, cfg, FLOOD, "info", NULL);
			if (k == 0) {
				sc.stop = 1;
				pthread_join(t, NULL);
			}
			(k ? b : a)[r] = FLOOD / res.secs;
			(k ? cb : ca)[r] = res.cpu_s * 1e6 / FLOOD;
			if (k == 0)
				printf("  round %d: scraped %d times: %.0f msg/s, "
				    "%.1f µs CPU per dead letter\n", r + 1,
				    sc.scrapes, a[r], ca[r]);
			else
				printf("  round %d: not scraped: %.0f msg/s, "
				    "%.1f µs\n", r + 1, b[r], cb[r]);
		}
	say("| | A: scraped every second | B: not scraped |\n|---|---|---|\n"
	    "| msg/s | %s | %s |\n| worker CPU per dead letter, µs | %s | %s |\n"
	    "\n(goal: the difference within noise; the scrapes' cost grows "
	    "with the archive: section 8)\n",
	    summ(a, ROUNDS, "%.0f", s1, sizeof(s1)),
	    summ(b, ROUNDS, "%.0f", s2, sizeof(s2)),
	    summ(ca, ROUNDS, "%.1f", s3, sizeof(s3)),
	    summ(cb, ROUNDS, "%.1f", s4, sizeof(s4)));
}

/* 8: what on-call waits for: dlqctl stats, groups (by cause too: the
 * prefill's 1 995 signatures are one cause), show and list by message
 * id, and a /metrics scrape, on an empty archive and on one of
 * ARCHIVE_ROWS records with its audit. */
static void
scenario_operator_queries(void)
{
	static const char *const what[] = { "dlqctl stats", "dlqctl groups",
		"dlqctl groups --queue Q", "GET /metrics", "dlqctl show ID",
		"dlqctl list --message-id M", "dlqctl groups --since 1h",
		"dlqctl groups --by-cause" };
	enum { NQ = sizeof(what) / sizeof(what[0]) };
	const char *argv[NQ][6] = {
		{ "stats", NULL }, { "groups", NULL },
		{ "groups", "--queue", "old_q7", NULL }, { NULL },
		{ "show", "1234", NULL },
		{ "list", "--message-id", "m-4321", NULL },
		{ "groups", "--since", "1h", NULL },
		{ "groups", "--by-cause", NULL } };
	const char *args[10];
	double t[NQ][2][16];
	char p[32], extra[96], path[256], s1[128], s2[128];
	const char *cfg;
	int port = 9500 + (int)(getpid() % 400), r, k, c, i;
	pid_t pid;
	int64_t t0;

	say("\n## 8. Operator queries: an empty archive and one of %d records "
	    "(2 %% open) and %d audited requests of 100 ids, %d rounds\n\n",
	    ARCHIVE_ROWS, ARCHIVE_ROWS / 10, ROUNDS);
	snprintf(path, sizeof(path), "%s/dlqctl", bin);
	snprintf(extra, sizeof(extra), "http = { listen = \"127.0.0.1:%d\"; };",
	    port);
	for (k = 0; k < 2; k++) {
		snprintf(p, sizeof(p), "bO%c_%d", k ? 'H' : 'E', (int)getpid());
		cfg = setup(p, 1, extra);
		assert_topology(cfg);
		if (k)
			prefill_cases(p, cfg, ARCHIVE_ROWS, 0);
		pid = start_ready(cfg, 1);
		for (r = 0; r < ROUNDS; r++)
			for (c = 0; c < NQ; c++) {
				args[0] = path, args[1] = "-c", args[2] = cfg;
				args[3] = "--json";	/* what is timed: the answer */
				for (i = 0; argv[c][i] != NULL; i++)
					args[4 + i] = argv[c][i];
				args[4 + i] = NULL;
				t0 = now_us();
				/* show of an id the empty archive lacks: exit 1 */
				if (c == 3 ? scrape(port) < 0 : run_wait(args) !=
				    0 && !(c == 4 && k == 0))
					fprintf(stderr, "bench: %s failed\n", what[c]);
				t[c][k][r] = (double)(now_us() - t0) / 1e6;
			}
		stop_worker(pid);
	}
	say("| | empty archive | %d records |\n|---|---|---|\n", ARCHIVE_ROWS);
	for (c = 0; c < NQ; c++)
		say("| %s, s | %s | %s |\n", what[c],
		    summ(t[c][0], ROUNDS, "%.3f", s1, sizeof(s1)),
		    summ(t[c][1], ROUNDS, "%.3f", s2, sizeof(s2)));
}

/* The archive of `p` deleted: the scale's are large (BENCH_KEEP=1
 * keeps them). */
static void
remove_archive(const char *p)
{
	static const char *const ext[] = { ".db", ".db-wal", ".db-shm" };
	char path[256];
	size_t i;

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s%s", dir, p, ext[i]);
		unlink(path);
	}
}

/* The CPU of `pid` for one run of dlqctl `argv` (NULL: a scrape of
 * /metrics on `port`), in ms, and its wall time in *wall_ms. */
static double
timed_ask(pid_t pid, const char *cfg, const char *const *argv, int port,
    double *wall)
{
	const char *args[12];
	char path[256];
	double cpu = proc_cpu(pid);
	int64_t t0 = now_us();
	int i;

	if (argv == NULL) {
		if (scrape(port) < 0)
			fprintf(stderr, "bench: a scrape failed\n");
	} else {
		snprintf(path, sizeof(path), "%s/dlqctl", bin);
		args[0] = path, args[1] = "-c", args[2] = cfg, args[3] = "--json";
		for (i = 0; argv[i] != NULL && i < 7; i++)
			args[4 + i] = argv[i];
		args[4 + i] = NULL;
		if (run_wait(args) != 0)
			fprintf(stderr, "bench: dlqctl %s failed\n", argv[0]);
	}
	*wall = (double)(now_us() - t0) / 1e3;
	return (proc_cpu(pid) - cpu) * 1e3;
}

/* The size of the archive's files (database, WAL). */
static double
archive_bytes(const char *p)
{
	static const char *const ext[] = { ".db", ".db-wal" };
	char path[256];
	struct stat st;
	double n = 0;
	size_t i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s%s", dir, p, ext[i]);
		if (stat(path, &st) == 0)
			n += (double)st.st_size;
	}
	return n;
}

/* 12 (issue 64): how each cost grows with the archive. For each size of
 * BENCH_SCALE (10000,100000,1000000; 10000000 when asked), two archives
 * made by the generator of scenario 8 (prefill_cases, with 512-byte
 * payloads and an x-death): "resolved" (2 % open, the rest resolved
 * over 30 days) and "open" (every record open: an outage). Timed: the
 * first start (the tallies counted, the indexes made), a start, what
 * on-call asks (median of BENCH_SCALE_ROUNDS, 3), a retention run (the
 * payloads of resolved records older than 15 days purged), and the
 * drain of N dead letters into it. */
#define SCALE_MAX	6
enum { SC_FIRST, SC_START, SC_SCRAPE, SC_STATS, SC_GROUPS, SC_CAUSES,
	SC_LIST, SC_DEEP, SC_SHOW, SC_BYTES, SC_PURGE, SC_PURGE_KIB, SC_RATE,
	SC_CPU, SC_N };
static void
scenario_scale(void)
{
	static const char *const what[SC_N] = {
		"first start (tallies counted, indexes made), s",
		"start-up to consuming, s", "GET /metrics, worker CPU ms",
		"dlqctl stats, ms", "dlqctl groups, ms",
		"dlqctl groups --by-cause, ms", "dlqctl list (first page), ms",
		"dlqctl list --before ID/2 (a page deep in it), ms",
		"dlqctl show ID, ms", "archive bytes per record",
		"retention run (purge > 15 days), s",
		"retention run, MiB written", "drain of N, msg/s",
		"drain, worker CPU µs per dead letter" };
	const char *sizes = getenv("BENCH_SCALE") ? getenv("BENCH_SCALE") :
	    "10000,100000,1000000";
	int rounds = env_int("BENCH_SCALE_ROUNDS", 3), port = 9400 +
	    (int)(getpid() % 90), rows[SCALE_MAX], ns = 0, i, k, r, c;
	double v[SC_N][SCALE_MAX][2], t[1][16], wall, cpu;
	char p[32], extra[128], mid[24], s1[64];
	const char *cfg, *sp;
	struct start_cost sc;
	struct result x, io0, io1;
	pid_t pid;

	for (sp = sizes; *sp != '\0' && ns < SCALE_MAX; sp += strcspn(sp, ","),
	    sp += *sp == ',')
		if (atoi(sp) > 0)
			rows[ns++] = atoi(sp);
	if (rounds > 16)
		rounds = 16;
	say("\n## 12. Scale: the costs by archive size (BENCH_SCALE), records "
	    "made by the generator, N = %d drained into each\n\n", N);
	/* without the owner SLA: its sweep marks every open record past it
	 * once (1.7 KiB written for each, measured), which would land in
	 * whichever figure runs then */
	snprintf(extra, sizeof(extra), "http = { listen = \"127.0.0.1:%d\"; };"
	    " cases = { owner_sla_ms = 0; };", port);
	for (i = 0; i < ns; i++)
		for (k = 0; k < 2; k++) {
			snprintf(p, sizeof(p), "bZ%d%c_%d", i, k ? 'O' : 'R',
			    (int)getpid());
			cfg = setup(p, 1, extra);
			assert_topology(cfg);
			printf("  %d records, %s: generating\n", rows[i],
			    k ? "all open" : "resolved");
			prefill_cases(p, cfg, rows[i], CASES_PAYLOADS |
			    (k ? CASES_ALL_OPEN : 0));
			v[SC_BYTES][i][k] = archive_bytes(p) / rows[i];
			for (c = 0; c < 2; c++) {
				int64_t t0 = now_us();

				stop_worker(start_ready(cfg, 1));
				v[c ? SC_START : SC_FIRST][i][k] =
				    (double)(now_us() - t0) / 1e6;
			}
			pid = start_ready(cfg, 1);
			snprintf(mid, sizeof(mid), "%d", rows[i] / 2);
			for (c = SC_SCRAPE; c <= SC_SHOW; c++) {
				static const char *const argv[][4] = {
					{ NULL }, { "stats", NULL },
					{ "groups", NULL },
					{ "groups", "--by-cause", NULL },
					{ "list", NULL },
					{ "list", "--before", "", NULL },
					{ "show", "", NULL } };
				const char *a[4];
				int j;

				for (j = 0; j < 4; j++)
					a[j] = argv[c - SC_SCRAPE][j] != NULL &&
					    argv[c - SC_SCRAPE][j][0] == '\0' ?
					    mid : argv[c - SC_SCRAPE][j];
				/* CPU in clock ticks: 20 scrapes a round */
				for (r = 0; r < rounds; r++) {
					t[0][r] = 0;
					for (j = 0; j < (c == SC_SCRAPE ? 20 : 1);
					    j++) {
						cpu = timed_ask(pid, cfg, c ==
						    SC_SCRAPE ? NULL : a, port,
						    &wall);
						t[0][r] += c == SC_SCRAPE ? cpu /
						    20 : wall;
					}
				}
				v[c][i][k] = median(t[0], rounds);
			}
			memset(&io0, 0, sizeof(io0));
			memset(&io1, 0, sizeof(io1));
			proc_io(pid, &io0);
			timed_ask(pid, cfg, (const char *[]){ "purge",
			    "--older-than", "15d", "--yes", NULL }, port, &wall);
			proc_io(pid, &io1);
			v[SC_PURGE][i][k] = wall / 1e3;
			v[SC_PURGE_KIB][i][k] = (io1.wchar - io0.wchar) / 1048576.0;
			stop_worker(pid);
			sc = start_cost(cfg, 1);
			fill(p, 1, N);
			x = drain_worker(p, cfg, N, "info", &sc);
			v[SC_RATE][i][k] = N / x.secs;
			v[SC_CPU][i][k] = x.cpu_s * 1e6 / N;
			printf("  %d records, %s: scrape %.1f ms CPU, stats %.0f "
			    "ms, drain %.0f msg/s\n", rows[i], k ? "all open" :
			    "resolved", v[SC_SCRAPE][i][k], v[SC_STATS][i][k],
			    v[SC_RATE][i][k]);
			if (getenv("BENCH_KEEP") == NULL)
				remove_archive(p);
		}
	say("| records |");
	for (i = 0; i < ns; i++)
		say(" %d resolved | %d open |", rows[i], rows[i]);
	say("\n|---|");
	for (i = 0; i < ns; i++)
		say("---|---|");
	say("\n");
	for (c = 0; c < SC_N; c++) {
		say("| %s |", what[c]);
		for (i = 0; i < ns; i++)
			for (k = 0; k < 2; k++) {
				snprintf(s1, sizeof(s1), c == SC_FIRST || c ==
				    SC_START || c == SC_PURGE ? "%.2f" : c ==
				    SC_SCRAPE || c == SC_CPU || c ==
				    SC_PURGE_KIB ? "%.1f" : "%.0f",
				    v[c][i][k]);
				say(" %s |", s1);
			}
		say("\n");
	}
	say("\n(goals at 1 000 000 open records: a scrape ≤ 10 ms of worker "
	    "CPU, stats ≤ 50 ms; medians of %d)\n", rounds);
}

/* The CPU seconds of the PostgreSQL server at `pg_url` so far: its
 * postmaster and every process it started (backends, writers), from
 * /proc. The server is scripts/postgres.sh's, its data in
 * /tmp/dlq-pg-PORT. */
static double
pg_server_cpu(const char *pg_url)
{
	char path[128], buf[512];
	const char *colon = strrchr(pg_url, ':');
	double cpu = 0;
	struct dirent *e;
	pid_t pm = 0, ppid;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "/tmp/dlq-pg-%d/data/postmaster.pid",
	    colon ? atoi(colon + 1) : 5798);
	if ((f = fopen(path, "r")) != NULL) {
		if (fgets(buf, sizeof(buf), f) != NULL)
			pm = (pid_t)atoi(buf);
		fclose(f);
	}
	if (pm == 0 || (d = opendir("/proc")) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		pid_t pid = (pid_t)atoi(e->d_name);
		char *rp;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		if (fgets(buf, sizeof(buf), f) != NULL &&
		    (rp = strrchr(buf, ')')) != NULL &&
		    sscanf(rp + 2, "%*c %d", &ppid) == 1 &&
		    (pid == pm || ppid == pm))
			cpu += proc_cpu(pid);
		fclose(f);
	}
	closedir(d);
	return cpu;
}

/* A new database on the server at `pg_url`; its URL in out[n]. */
static void
pg_database(const char *pg_url, const char *name, char *out, size_t n)
{
	const char *slash = strrchr(pg_url, '/');
	char sql[128];
	PGconn *c = PQconnectdb(pg_url);
	PGresult *res;

	if (PQstatus(c) != CONNECTION_OK || slash == NULL)
		die("cannot connect to the benchmark's PostgreSQL server");
	snprintf(sql, sizeof(sql), "CREATE DATABASE \"%s\"", name);
	res = PQexec(c, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		die("CREATE DATABASE failed");
	PQclear(res);
	PQfinish(c);
	snprintf(out, n, "%.*s/%s", (int)(slash - pg_url), pg_url, name);
}

/* `nw` workers on one config drain n dead letters filled before they
 * start; the time until their logs count n, their CPU together, and
 * the database server's CPU meanwhile (pg_url NULL: none). */
static struct result
drain_replicas(const char *p, const char *cfg, int nw, int n,
    const char *pg_url, double *db_cpu_s)
{
	struct result r = { 0 };
	struct tail t[2] = { { -1, 0, "" }, { -1, 0, "" } };
	char log[2][256], sock[256];
	pid_t pid[2];
	double db0 = pg_url ? pg_server_cpu(pg_url) : 0;
	int64_t t0 = now_us();
	int i;

	for (i = 0; i < nw; i++) {
		snprintf(log[i], sizeof(log[i]), "%s/%s-replica%d-%d.log", dir,
		    p, i, ++seq);
		if (i == 1) {	/* the second: its own control socket */
			snprintf(sock, sizeof(sock), "DLQ_CONTROL_SOCKET=%s/%s-b."
			    "sock", dir, p);
			putenv(sock);
		}
		pid[i] = start_worker(cfg, log[i], "info");
		if (i == 1)
			unsetenv("DLQ_CONTROL_SOCKET");
	}
	for (i = 0; i < nw; i++)
		while ((t[i].fd = open(log[i], O_RDONLY)) < 0)
			nap_ms(1);
	for (;;) {
		long done = 0;

		for (i = 0; i < nw; i++) {
			done += tail_count(&t[i], "\"event\":\"dead_letter\"");
			if (waitpid(pid[i], NULL, WNOHANG) == pid[i])
				die("a worker exited during a drain (see its log)");
		}
		if (done >= n)
			break;
		if (now_us() - t0 > 600 * 1000000LL)
			die("a drain took more than 10 minutes");
		nap_ms(5);
	}
	r.secs = (double)(now_us() - t0) / 1e6;
	for (i = 0; i < nw; i++)
		r.cpu_s += proc_cpu(pid[i]);
	*db_cpu_s = pg_url ? pg_server_cpu(pg_url) - db0 : 0;
	for (i = 0; i < nw; i++) {
		close(t[i].fd);
		stop_worker(pid[i]);
	}
	return r;
}

static void
scenario_replicas(void)
{
	const char *pg_url = getenv("DLQ_BENCH_PG_URL");
	int n = env_int("BENCH_PG_N", 100000);
	int rounds = env_int("BENCH_PG_ROUNDS", 2), r, k;
	static const char *const label[3] = { "one worker, SQLite",
	    "one worker, PostgreSQL", "two replicas, PostgreSQL" };
	double rate[3][16], cpu[3][16], db[3][16], sum[3][16];
	char p[32], db_name[64], db_url[512], extra[640], s1[96], s2[96],
	    s3[96], s4[96];
	const char *cfg;
	struct result res;
	double db_s;

	if (pg_url == NULL) {
		say("\n## 9. PostgreSQL replicas: not run (no DLQ_BENCH_PG_URL; "
		    "make bench starts the server)\n");
		return;
	}
	if (rounds > 16)
		rounds = 16;
	say("\n## 9. PostgreSQL archive and replicas: N = %d into one DLQ, "
	    "%d rounds, the three alternating\n\n", n, rounds);
	for (r = 0; r < rounds; r++)
		for (k = 0; k < 3; k++) {
			snprintf(p, sizeof(p), "pg%d%d_%d", k, r, (int)getpid());
			extra[0] = '\0';
			if (k > 0) {
				snprintf(db_name, sizeof(db_name), "bench_%s", p);
				pg_database(pg_url, db_name, db_url,
				    sizeof(db_url));
				snprintf(extra, sizeof(extra), "archive = { url = "
				    "\"%s\"; };\n", db_url);
			}
			cfg = setup(p, 1, extra[0] ? extra : NULL);
			assert_topology(cfg);
			fill(p, 1, n);
			res = drain_replicas(p, cfg, k == 2 ? 2 : 1, n,
			    k > 0 ? pg_url : NULL, &db_s);
			rate[k][r] = n / res.secs;
			cpu[k][r] = res.cpu_s * 1e6 / n;
			db[k][r] = db_s * 1e6 / n;
			sum[k][r] = cpu[k][r] + db[k][r];
			printf("  round %d, %s: %.0f msg/s\n", r + 1, label[k],
			    rate[k][r]);
		}
	say("| | drain rate, msg/s | workers' CPU per dead letter, µs | "
	    "database server's CPU per dead letter, µs | both, µs |\n"
	    "|---|---|---|---|---|\n");
	for (k = 0; k < 3; k++)
		say("| %s | %s | %s | %s | %s |\n", label[k],
		    summ(rate[k], rounds, "%.0f", s1, sizeof(s1)),
		    summ(cpu[k], rounds, "%.1f", s2, sizeof(s2)),
		    k == 0 ? "– (in the worker)" : summ(db[k], rounds, "%.1f",
		    s3, sizeof(s3)), summ(sum[k], rounds, "%.1f", s4,
		    sizeof(s4)));
	say("\nThe workers' CPU includes their start (topology, archive "
	    "open, connections; a few ms). Broker, database and workers share "
	    "the same %ld cores.\n", sysconf(_SC_NPROCESSORS_ONLN));
}

/* BENCH_ONLY=drain,memory,... runs only the named scenarios. */
static int
wanted(const char *name)
{
	const char *only = getenv("BENCH_ONLY");
	size_t n = strlen(name);
	const char *p;

	if (only == NULL || *only == '\0')
		return 1;
	for (p = only; (p = strstr(p, name)) != NULL; p += n)
		if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

static int
env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && atoi(v) > 0 ? atoi(v) : def;
}

int
main(int argc, char **argv)
{
	char path[256], host[64] = "?", date[64];
	time_t now = time(NULL);
	int64_t t0 = now_us();

	url = getenv("DLQ_TEST_AMQP_URL");
	bin = getenv("DLQ_BIN") ? getenv("DLQ_BIN") : "build";
	if (url == NULL)
		die("set DLQ_TEST_AMQP_URL (make bench does)");
	if (argc == 6 && strcmp(argv[1], "--bare-consumers") == 0)
		return bare_consumers_main(argv[2], atoi(argv[3]), atoi(argv[4]),
		    atoi(argv[5]));
	N = env_int("BENCH_N", 20000);
	ROUNDS = env_int("BENCH_ROUNDS", 5);
	if (ROUNDS > 16)
		ROUNDS = 16;
	FLOOD = env_int("BENCH_FLOOD", 100000);
	REPLAY_N = env_int("BENCH_REPLAY_N", 2000);
	ARCHIVE_ROWS = env_int("BENCH_ARCHIVE_ROWS", 500000);
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "/tmp/dlq-bench-%d", (int)getpid());
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/benchmarks.md", bin);
	if ((md = fopen(path, "w")) == NULL)
		die("cannot write the results file");
	rx_port = start_receiver();
	gethostname(host, sizeof(host));
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	say("# dlq-monitor benchmark\n\n%s on %s: %ld cores, %.1f GiB; broker "
	    "at %s; N = %d, rounds = %d, flood = %d, replay N = %d.\n"
	    "Command: `make bench`. Persistent 512-byte messages, prefetch %d.\n",
	    date, host, sysconf(_SC_NPROCESSORS_ONLN),
	    (double)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / 1073741824.0,
	    url, N, ROUNDS, FLOOD, REPLAY_N, PREFETCH);
	if (wanted("drain"))
		scenario_drain(PREFETCH, "1");
	if (wanted("drain1000"))
		scenario_drain(1000, "1b");
	if (wanted("memory"))
		scenario_memory();
	if (wanted("scaling"))
		scenario_scaling();
	if (wanted("alert"))
		scenario_alert_latency();
	if (wanted("replay"))
		scenario_replay();
	if (wanted("archive"))
		scenario_archive_size();
	if (wanted("queries"))
		scenario_operator_queries();
	if (wanted("replicas"))
		scenario_replicas();
	if (wanted("scrapes"))
		scenario_scrapes();
	if (wanted("scale"))
		scenario_scale();
	say("\n(whole run: %.0f s; results also in %s)\n",
	    (double)(now_us() - t0) / 1e6, path);
	fclose(md);
	cleanup();
	return 0;
}
