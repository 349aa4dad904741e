/* harness.c - see harness.h. */
#include "harness.h"

#include "buf.h"

#include <amqp_tcp_socket.h>
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <ftw.h>
#include <signal.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int seq;

static const char *tmpdir(void);

int64_t
h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
nap(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

const char *
h_url(void)
{
	const char *u = getenv("DLQ_TEST_AMQP_URL");

	return u ? u : "amqp://guest:guest@localhost:5699/";
}

int
h_port(void)
{
	const char *p = strrchr(h_url(), ':');

	return p ? atoi(p + 1) : 5699;
}

/* The environment's `var`, else `fmt` with the test broker's port plus
 * `offset` (scripts/test.sh's layout), kept in `buf`. */
static const char *
env_or_port(const char *var, char *buf, size_t n, const char *fmt,
    int offset)
{
	const char *v = getenv(var);

	if (v != NULL)
		return v;
	snprintf(buf, n, fmt, h_port() + offset);
	return buf;
}

const char *
h_mgmt_url(void)
{
	static char url[64];

	return env_or_port("DLQ_TEST_MANAGEMENT_URL", url, sizeof(url),
	    "http://127.0.0.1:%d/", 10000);
}

const char *
h_tls_url(void)
{
	static char url[96];

	return env_or_port("DLQ_TEST_AMQPS_URL", url, sizeof(url),
	    "amqps://guest:guest@localhost:%d/", 1000);
}

const char *
h_mgmt_tls_url(void)
{
	static char url[64];

	return env_or_port("DLQ_TEST_MANAGEMENT_TLS_URL", url, sizeof(url),
	    "https://localhost:%d/", 11000);
}

const char *
h_tls_ca(void)
{
	static char path[128];

	return env_or_port("DLQ_TEST_TLS_CA", path, sizeof(path),
	    "/var/tmp/dlq-monitor-rabbitmq-%d/tls/ca.pem", 0);
}

const char *
h_tls_file(const char *name)
{
	static char path[4][256];
	static int slot;
	const char *ca = h_tls_ca(), *slash = strrchr(ca, '/');
	char *p = path[slot++ % 4];

	snprintf(p, 256, "%.*s/%s", slash ? (int)(slash - ca) : 1,
	    slash ? ca : ".", name);
	return p;
}

const char *
h_bin(const char *name)
{
	static char path[4][512];
	static int slot;
	const char *dir = getenv("DLQ_BIN");
	char *p = path[slot++ % 4];

	snprintf(p, 512, "%s/%s", dir ? dir : "build/test", name);
	return p;
}

bool
h_sanitized(void)
{
	const char *dir = getenv("DLQ_BIN");

	return dir != NULL && strstr(dir, "san-") != NULL;
}

void
h_name(char *out, size_t n, const char *stem)
{
	/* the directory's random suffix keeps names unique across pid reuse */
	snprintf(out, n, "t%d%s_%d_%s", (int)getpid(),
	    strrchr(tmpdir(), '-') + 1, ++seq, stem);
}

/* A private directory per test process. Unique even when a pid comes
 * back (pid_max is small): a reused directory could hand a test the logs
 * of an earlier one. */
static char tmp_dir[128];
static pid_t tmp_owner;

static int
remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	remove(path);		/* best effort: go on with the rest */
	return 0;
}

/* At the test process's exit its directory goes (logs, archives: a flood
 * leaves 100 MB), unless DLQ_TEST_KEEP is set to look at them. */
static void
remove_tmpdir(void)
{
	if (tmp_owner == getpid() && getenv("DLQ_TEST_KEEP") == NULL)
		nftw(tmp_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *
tmpdir(void)
{
	if (tmp_owner != getpid()) {
		snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/dlq-it-%d-XXXXXX",
		    (int)getpid());
		ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
		tmp_owner = getpid();
		atexit(remove_tmpdir);
	}
	return tmp_dir;
}

const char *
h_tmp_path(const char *name)
{
	static char paths[4][256];
	static int slot;
	char *p = paths[slot++ % 4];

	snprintf(p, 256, "%s/%s", tmpdir(), name);
	return p;
}

amqp_connection_state_t
h_connect(void)
{
	struct amqp_connection_info ci;
	amqp_connection_state_t c = amqp_new_connection();
	amqp_socket_t *s = amqp_tcp_socket_new(c);
	char *url = strdup(h_url());
	amqp_rpc_reply_t r;

	ck_assert_int_eq(amqp_parse_url(url, &ci), AMQP_STATUS_OK);
	ck_assert_msg(amqp_socket_open(s, ci.host, ci.port) == AMQP_STATUS_OK,
	    "cannot connect to the test broker at %s", h_url());
	r = amqp_login(c, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
	    ci.user, ci.password);
	ck_assert_int_eq(r.reply_type, AMQP_RESPONSE_NORMAL);
	amqp_channel_open(c, 1);
	ck_assert_int_eq(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
	free(url);
	return c;
}

void
h_close(amqp_connection_state_t c)
{
	amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
	amqp_connection_close(c, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(c);
}

amqp_table_entry_t
h_str_entry(const char *key, const char *value)
{
	amqp_table_entry_t e;

	e.key = amqp_cstring_bytes(key);
	e.value.kind = AMQP_FIELD_KIND_UTF8;
	e.value.value.bytes = amqp_cstring_bytes(value);
	return e;
}

int
h_control_connect(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 20, 0 };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

const char *
h_control_line(int fd)
{
	static char buf[65536];
	size_t got = 0;
	ssize_t n;

	while (got < sizeof(buf) - 1 &&
	    (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0) {
		got += (size_t)n;
		if (memchr(buf, '\n', got))
			break;
	}
	buf[got] = '\0';
	return buf;
}

void
h_publish(amqp_connection_state_t c, const char *exchange, const char *rk,
    const void *body, size_t len, const char *message_id,
    const amqp_table_t *headers)
{
	amqp_basic_properties_t p;
	amqp_bytes_t b = { len, (void *)body };

	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
	p.delivery_mode = 2;
	p.content_type = amqp_cstring_bytes("application/json");
	if (message_id != NULL) {
		p._flags |= AMQP_BASIC_MESSAGE_ID_FLAG |
		    AMQP_BASIC_CORRELATION_ID_FLAG;
		p.message_id = amqp_cstring_bytes(message_id);
		p.correlation_id = amqp_cstring_bytes("corr-1");
	}
	if (headers != NULL) {
		p._flags |= AMQP_BASIC_HEADERS_FLAG;
		p.headers = *headers;
	}
	ck_assert_int_eq(amqp_basic_publish(c, 1, amqp_cstring_bytes(exchange),
	    amqp_cstring_bytes(rk), 0, 0, &p, b), AMQP_STATUS_OK);
}

void
h_fill_confirmed(const char *queue, int n, const char *prefix)
{
	amqp_connection_state_t c = h_connect();
	amqp_frame_t f;
	char id[96];
	uint64_t acked = 0;
	int i;

	amqp_confirm_select(c, 1);
	ck_assert_int_eq(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-%d", prefix, i);
		h_publish(c, "", queue, "{\"fill\":true}", 13, id, NULL);
	}
	while (acked < (uint64_t)n) {
		ck_assert_int_eq(amqp_simple_wait_frame(c, &f), AMQP_STATUS_OK);
		if (f.frame_type != AMQP_FRAME_METHOD)
			continue;
		ck_assert_uint_ne(f.payload.method.id, AMQP_BASIC_NACK_METHOD);
		if (f.payload.method.id == AMQP_BASIC_ACK_METHOD)
			acked = ((amqp_basic_ack_t *)f.payload.method.decoded)->
			    delivery_tag;
	}
	h_close(c);
}

/* basic.get one message; leaves it unacked; returns its tag or 0. */
static uint64_t
get_one(amqp_connection_state_t c, const char *queue, amqp_message_t *msg)
{
	amqp_rpc_reply_t r;
	uint64_t tag;

	amqp_maybe_release_buffers(c);
	r = amqp_basic_get(c, 1, amqp_cstring_bytes(queue), 0);
	if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
	    r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
		amqp_channel_close_t *m = r.reply.decoded;
		ck_abort_msg("basic.get on %s: channel closed: %u %.*s", queue,
		    m->reply_code, (int)m->reply_text.len,
		    (char *)m->reply_text.bytes);
	}
	if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
	    r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
		amqp_connection_close_t *m = r.reply.decoded;
		ck_abort_msg("basic.get on %s: connection closed: %u %.*s", queue,
		    m->reply_code, (int)m->reply_text.len,
		    (char *)m->reply_text.bytes);
	}
	ck_assert_int_eq(r.reply_type, AMQP_RESPONSE_NORMAL);
	if (r.reply.id != AMQP_BASIC_GET_OK_METHOD)
		return 0;
	tag = ((amqp_basic_get_ok_t *)r.reply.decoded)->delivery_tag;
	r = amqp_read_message(c, 1, msg, 0);
	ck_assert_int_eq(r.reply_type, AMQP_RESPONSE_NORMAL);
	return tag;
}

int
h_reject(amqp_connection_state_t c, const char *queue, int n, int timeout_ms)
{
	int64_t end = h_now_ms() + timeout_ms;
	amqp_message_t m;
	uint64_t tag;
	int done = 0;

	while (done < n && h_now_ms() < end) {
		if ((tag = get_one(c, queue, &m)) == 0) {
			nap(20);
			continue;
		}
		amqp_destroy_message(&m);
		ck_assert_int_eq(amqp_basic_reject(c, 1, tag, 0), 0);
		done++;
	}
	return done;
}

bool
h_get(amqp_connection_state_t c, const char *queue, amqp_message_t *msg,
    int timeout_ms)
{
	int64_t end = h_now_ms() + timeout_ms;
	uint64_t tag;

	while (h_now_ms() < end) {
		if ((tag = get_one(c, queue, msg)) != 0) {
			ck_assert_int_eq(amqp_basic_ack(c, 1, tag, 0), 0);
			return true;
		}
		nap(20);
	}
	return false;
}

/* The ready messages or the consumers of `queue` (passive declare); -1
 * when it does not exist. */
static int
declared_count(const char *queue, bool consumers)
{
	amqp_connection_state_t c = h_connect();
	amqp_queue_declare_ok_t *ok;
	int n = -1;

	ok = amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 1, 0, 0, 0,
	    amqp_empty_table);
	if (ok != NULL) {
		n = (int)(consumers ? ok->consumer_count : ok->message_count);
		h_close(c);
	} else
		amqp_destroy_connection(c);
	return n;
}

int
h_count(const char *queue)
{
	return declared_count(queue, false);
}

int
h_consumers(const char *queue)
{
	return declared_count(queue, true);
}

/* The child of h_consumer(): what it handled, as its exit status. */
static int
consume_in_child(const char *queue, int n, bool reject, int idle_ms)
{
	amqp_connection_state_t c = h_connect();
	struct timeval tv = { idle_ms / 1000, (idle_ms % 1000) * 1000 };
	amqp_envelope_t env;
	amqp_rpc_reply_t r;
	int done = 0;

	amqp_basic_qos(c, 1, 0, 1, 0);
	if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL ||
	    amqp_basic_consume(c, 1, amqp_cstring_bytes(queue),
	    amqp_empty_bytes, 0, 0, 0, amqp_empty_table) == NULL)
		return 255;
	while (done < n) {
		amqp_maybe_release_buffers(c);
		r = amqp_consume_message(c, &env, &tv, 0);
		if (r.reply_type != AMQP_RESPONSE_NORMAL)
			break;		/* idle that long, or an error */
		if ((reject ? amqp_basic_reject(c, 1, env.delivery_tag, 0) :
		    amqp_basic_ack(c, 1, env.delivery_tag, 0)) != 0)
			return 255;
		amqp_destroy_envelope(&env);
		done++;
	}
	h_close(c);
	return done;
}

pid_t
h_consumer(const char *queue, int n, bool reject, int idle_ms)
{
	int64_t end = h_now_ms() + 20000;
	int before = h_consumers(queue);
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(consume_in_child(queue, n, reject, idle_ms));
	while (h_consumers(queue) <= before && h_now_ms() < end)
		nap(20);
	ck_assert_int_gt(h_consumers(queue), before);
	return pid;
}

int
h_consumer_done(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_ne(WEXITSTATUS(status), 255);
	return WEXITSTATUS(status);
}

bool
h_wait_count(const char *queue, int n, int timeout_ms)
{
	int64_t end = h_now_ms() + timeout_ms;

	do {
		if (h_count(queue) == n)
			return true;
		nap(50);
	} while (h_now_ms() < end);
	return false;
}

const char *
h_write_file(const char *stem, const char *text)
{
	static char paths[4][256];
	static int slot;
	char *p = paths[slot++ % 4];
	FILE *f;

	snprintf(p, 256, "%s/%d_%s", tmpdir(), ++seq, stem);
	ck_assert_ptr_nonnull(f = fopen(p, "w"));
	fputs(text, f);
	fclose(f);
	return p;
}

/* The control socket of the worker set up for `prefix`. */
const char *
h_socket(const char *prefix)
{
	static char path[160];

	snprintf(path, sizeof(path), "%s/%s.sock", tmpdir(), prefix);
	return path;
}

static int heartbeat_s = 5;
static char broker_url[256], broker_more[512], topology_more[256];

void
h_set_heartbeat(int seconds)
{
	heartbeat_s = seconds;
}

void
h_set_topology(const char *settings)
{
	snprintf(topology_more, sizeof(topology_more), "%s", settings);
}

void
h_set_broker(const char *url, const char *settings)
{
	snprintf(broker_url, sizeof(broker_url), "%s", url);
	snprintf(broker_more, sizeof(broker_more), "%s", settings);
}

/* `extra` into out[n] with `setting` first in its group `group`, or in
 * a group of its own before it when it has none. */
static void
in_group(char *out, size_t n, const char *extra, const char *group,
    const char *setting)
{
	char open[64];
	const char *g;

	snprintf(open, sizeof(open), "%s = {", group);
	if ((g = strstr(extra, open)) != NULL)
		snprintf(out, n, "%.*s%s %s%s", (int)(g - extra), extra, open,
		    setting, g + strlen(open));
	else
		snprintf(out, n, "%s %s };\n%s", open, setting, extra);
}

bool
h_archive_is_postgres(void)
{
	const char *b = getenv("DLQ_TEST_ARCHIVE");

	return b != NULL && strcmp(b, "postgres") == 0;
}

static const char *pg_database_once(const char *name);

const char *
h_setup(const char *prefix, const char *const *queues, const char *extra)
{
	char top[8192], cfg[8192], name[256], more[4096], ctl[4096];
	char setting[400];
	const char *tpath, *colon;
	bool own_archive = extra && strstr(extra, "archive =");
	size_t off;

	off = (size_t)snprintf(top, sizeof(top),
	    "work_exchange = \"%s_x\";\ndead_letter_exchange = \"%s_dlx\";\n"
	    "%s\nqueues = (\n", prefix, prefix, topology_more);
	for (; *queues != NULL; queues++) {
		colon = strchr(*queues, ':');
		snprintf(name, sizeof(name), "%.*s",
		    (int)(colon ? (size_t)(colon - *queues) : strlen(*queues)),
		    *queues);
		off += (size_t)snprintf(top + off, sizeof(top) - off,
		    "  { name = \"%s\"; retry_delay_ms = %s; }%s\n", name,
		    colon ? colon + 1 : "0", queues[1] ? "," : "");
	}
	snprintf(top + off, sizeof(top) - off, ");\n");
	tpath = h_write_file("topology.conf", top);
	/* the control group always names this test's socket, the topology
	 * group this test's file */
	snprintf(setting, sizeof(setting), "socket = \"%s\";", h_socket(prefix));
	in_group(ctl, sizeof(ctl), extra ? extra : "", "control", setting);
	snprintf(setting, sizeof(setting), "file = \"%s\";", tpath);
	in_group(more, sizeof(more), ctl, "topology", setting);
	off = (size_t)snprintf(cfg, sizeof(cfg),
	    "rabbitmq = { url = \"%s\"; prefetch = 50; heartbeat = %d;\n"
	    "  reconnect_min_ms = 100; reconnect_max_ms = 1000; %s };\n",
	    broker_url[0] ? broker_url : h_url(), heartbeat_s, broker_more);
	if (!own_archive && h_archive_is_postgres())
		off += (size_t)snprintf(cfg + off, sizeof(cfg) - off,
		    "archive = { url = \"%s\"; };\n", pg_database_once(prefix));
	else if (!own_archive)
		off += (size_t)snprintf(cfg + off, sizeof(cfg) - off,
		    "archive = { path = \"%s/%s.db\"; };\n", tmpdir(), prefix);
	/* no HTTP endpoint unless the test asks for one: ports are shared */
	if (extra == NULL || strstr(extra, "http =") == NULL)
		off += (size_t)snprintf(cfg + off, sizeof(cfg) - off,
		    "http = { listen = \"0\"; };\n");
	snprintf(cfg + off, sizeof(cfg) - off, "%s\n", more);
	return h_write_file("worker.conf", cfg);
}

void
h_worker_start(struct h_worker *w, const char *const *args,
    const char *const *env)
{
	h_spawn(w, "dlq-worker", args, env);
}

void
h_spawn(struct h_worker *w, const char *prog, const char *const *args,
    const char *const *env)
{
	const char *argv[24], *name = strrchr(prog, '/');
	pid_t parent;
	int i = 0, fd;

	name = name != NULL ? name + 1 : prog;
	snprintf(w->log, sizeof(w->log), "%s/%s-%d.log", tmpdir(), name, ++seq);
	snprintf(w->err, sizeof(w->err), "%s/%s-%d.err", tmpdir(), name, seq);
	argv[i++] = name != prog ? prog : h_bin(prog);
	for (; args != NULL && *args != NULL && i < 23; args++)
		argv[i++] = *args;
	argv[i] = NULL;
	/* created here, before the fork: a waiter must never read an older
	 * file's lines */
	close(open(w->log, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	close(open(w->err, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	parent = getpid();
	w->pid = fork();
	ck_assert_int_ge(w->pid, 0);
	if (w->pid == 0) {
		/* a test that fails, or is killed at its timeout, takes its
		 * worker with it: no stray worker loads the next tests */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != parent)
			_exit(127);
		fd = open(w->log, O_WRONLY | O_APPEND);
		dup2(fd, 1);
		fd = open(w->err, O_WRONLY | O_APPEND);
		dup2(fd, 2);
		for (; env != NULL && *env != NULL; env++)
			putenv((char *)*env);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
}

long
h_worker_kib(const struct h_worker *w, const char *field)
{
	char path[64], *text, *p;
	long kib = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)w->pid);
	text = h_slurp(path);
	if (text != NULL && (p = strstr(text, field)) != NULL)
		kib = strtol(p + strlen(field), NULL, 10);
	free(text);
	return kib;
}

char *
h_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (f == NULL)
		return strdup("");
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 131072;
			buf = realloc(buf, cap);
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		if (n == 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/* Visits complete lines whose "event" is `event`. */
static int
scan(struct h_worker *w, const char *event, cJSON **out, int max)
{
	char *text = h_slurp(w->log), *line, *nl, pat[128];
	int n = 0;

	snprintf(pat, sizeof(pat), "\"event\":\"%s\"", event);
	for (line = text; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		*nl = '\0';
		if (strstr(line, pat) == NULL)
			continue;
		if (out != NULL && n < max)
			out[n] = cJSON_Parse(line);
		n++;
	}
	free(text);
	return n;
}

int
h_worker_count(struct h_worker *w, const char *event)
{
	return scan(w, event, NULL, 0);
}

bool
h_worker_wait(struct h_worker *w, const char *event, int n, int timeout_ms)
{
	int64_t end = h_now_ms() + timeout_ms;

	do {
		if (scan(w, event, NULL, 0) >= n)
			return true;
		ck_assert_msg(waitpid(w->pid, NULL, WNOHANG) == 0,
		    "dlq-worker exited while waiting for %s", event);
		nap(50);
	} while (h_now_ms() < end);
	return false;
}

static int64_t
archived_id(struct h_worker *w, const char *message_id, int nth)
{
	cJSON **ev;
	int64_t id = -1;
	int n, i, seen = 0;

	ev = h_worker_events(w, "dead_letter", &n);
	for (i = 0; i < n && id == -1; i++) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(ev[i],
		    "message_id");
		if (cJSON_IsString(m) && strcmp(m->valuestring, message_id) == 0
		    && ++seen == nth)
			id = h_jnum(ev[i], "id");
	}
	h_events_free(ev, n);
	return id;
}

int64_t
h_archived(struct h_worker *w, const char *message_id, int nth,
    int timeout_ms)
{
	int64_t end = h_now_ms() + timeout_ms, id;

	while ((id = archived_id(w, message_id, nth)) == -1) {
		ck_assert_msg(h_now_ms() < end, "no dead_letter #%d logged for "
		    "message_id %s", nth, message_id);
		ck_assert_msg(waitpid(w->pid, NULL, WNOHANG) == 0,
		    "dlq-worker exited while waiting for %s", message_id);
		nap(50);
	}
	return id;
}

cJSON **
h_worker_events(struct h_worker *w, const char *event, int *n)
{
	int total = scan(w, event, NULL, 0);
	cJSON **v = calloc((size_t)total + 1, sizeof(*v));

	/* lines logged between the two reads are not in v */
	*n = scan(w, event, v, total);
	if (*n > total)
		*n = total;
	return v;
}

void
h_events_free(cJSON **v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		cJSON_Delete(v[i]);
	free(v);
}

int
h_worker_exit(struct h_worker *w, int timeout_ms)
{
	int64_t end = h_now_ms() + timeout_ms;
	int status;

	while (h_now_ms() < end) {
		if (waitpid(w->pid, &status, WNOHANG) == w->pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		nap(20);
	}
	return -2;
}

int
h_worker_stop(struct h_worker *w, int timeout_ms, int64_t *ms)
{
	return h_worker_signal(w, SIGTERM, timeout_ms, ms);
}

int
h_worker_signal(struct h_worker *w, int sig, int timeout_ms, int64_t *ms)
{
	int64_t start = h_now_ms();
	int status;

	kill(w->pid, sig);
	while (h_now_ms() - start < timeout_ms) {
		if (waitpid(w->pid, &status, WNOHANG) == w->pid) {
			if (ms != NULL)
				*ms = h_now_ms() - start;
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		}
		nap(20);
	}
	kill(w->pid, SIGKILL);
	waitpid(w->pid, &status, 0);
	return -1;
}

/* Runs argv to completion; stdout into *out, stderr into *err, or both
 * into *out when `merged`. */
static int
run(const char *const *argv, const char *const *env, char **out, char **err,
    bool merged)
{
	char opath[256], epath[256];
	int status, fd;
	pid_t pid;

	snprintf(opath, sizeof(opath), "%s/run-%d.out", tmpdir(), ++seq);
	snprintf(epath, sizeof(epath), "%s/run-%d.err", tmpdir(), seq);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fd = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		if (!merged)
			fd = open(epath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		for (; env != NULL && *env != NULL; env++)
			putenv((char *)*env);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	if (out != NULL)
		*out = h_slurp(opath);
	if (err != NULL)
		*err = h_slurp(epath);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int
h_run(const char *const *argv, const char *const *env, char **out)
{
	return run(argv, env, out, NULL, true);
}

int
h_run_split(const char *const *argv, const char *const *env, char **out,
    char **err)
{
	return run(argv, env, out, err, false);
}

static char shared_dlqctl[256];

const char *
h_share_tmpdir(void)
{
	char cmd[700];

	chmod(tmpdir(), 0755);
	snprintf(shared_dlqctl, sizeof(shared_dlqctl), "%s/dlqctl", tmpdir());
	snprintf(cmd, sizeof(cmd), "cp %s %s && chmod 755 %s", h_bin("dlqctl"),
	    shared_dlqctl, shared_dlqctl);
	ck_assert_int_eq(system(cmd), 0);
	return shared_dlqctl;
}

int
h_dlqctl(const char *cfg, const char *user, cJSON **json,
    const char *const *args)
{
	const char *argv[32];
	char *out;
	int i = 0, rc;

	if (user != NULL) {
		argv[i++] = "/usr/sbin/runuser";
		argv[i++] = "-u";
		argv[i++] = user;
		argv[i++] = "--";
		argv[i++] = shared_dlqctl;
	} else
		argv[i++] = h_bin("dlqctl");
	argv[i++] = "-c";
	argv[i++] = cfg;
	argv[i++] = "--json";
	for (; *args != NULL && i < 31; args++)
		argv[i++] = *args;
	argv[i] = NULL;
	rc = h_run_split(argv, NULL, &out, NULL);
	if (json != NULL)
		*json = cJSON_Parse(out);
	free(out);
	return rc;
}

const char *
h_jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

int64_t
h_jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

int
h_free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	ck_assert_int_ge(fd, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

int
h_broker_ctl(const char *const *args, char **out)
{
	const char *argv[16] = { "/bin/bash", "scripts/broker.sh", "ctl" };
	char port[16];
	int i;

	snprintf(port, sizeof(port), "%d", h_port());
	argv[3] = port;
	for (i = 0; args[i] != NULL; i++) {
		ck_assert_int_lt(4 + i, 15);
		argv[4 + i] = args[i];
	}
	argv[4 + i] = NULL;
	return h_run(argv, NULL, out);
}

void
h_queue_policy(const char *name, const char *queue, const char *def)
{
	char pattern[300], want[400], *out, *lines;
	int64_t until = h_now_ms() + 20000;
	size_t i, o = 0;
	bool applied;

	if (def == NULL) {
		ck_assert_int_eq(h_broker_ctl((const char *[]){ "clear_policy",
		    name, NULL }, &out), 0);
		free(out);
		return;
	}
	pattern[o++] = '^';
	for (i = 0; queue[i] != '\0' && o < sizeof(pattern) - 4; i++) {
		if (queue[i] == '.')
			pattern[o++] = '\\';
		pattern[o++] = queue[i];
	}
	pattern[o++] = '$';
	pattern[o] = '\0';
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "set_policy", name,
	    pattern, def, "--apply-to", "queues", NULL }, &out), 0);
	free(out);
	do {
		ck_assert_int_eq(h_broker_ctl((const char *[]){ "list_queues",
		    "-q", "--no-table-headers", "name", "policy", NULL }, &out),
		    0);
		ck_assert_int_ge(asprintf(&lines, "\n%s", out), 0);
		free(out);
		snprintf(want, sizeof(want), "\n%s\t", queue);
		applied = strstr(lines, want) == NULL;	/* not declared yet */
		snprintf(want, sizeof(want), "\n%s\t%s\n", queue, name);
		applied |= strstr(lines, want) != NULL;
		free(lines);
	} while (!applied && h_now_ms() < until);
	ck_assert_msg(applied, "policy %s not applied to %s", name, queue);
}

int
h_connection_info(const char *name, const char *column, char *value,
    size_t n)
{
	char want[300], *out, *line, *save;
	int found = 0;

	snprintf(want, sizeof(want), "{\"connection_name\",\"%s\"}", name);
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "list_connections",
	    "-q", column, "client_properties", NULL }, &out), 0);
	value[0] = '\0';
	for (line = strtok_r(out, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, want) == NULL)
			continue;
		if (found++ == 0)
			snprintf(value, n, "%.*s", (int)strcspn(line, "\t"),
			    line);
	}
	free(out);
	return found;
}

bool
h_wait_listening(int port, int timeout_ms)
{
	struct sockaddr_in a;
	int64_t end = h_now_ms() + timeout_ms;
	int fd, rc;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	do {
		ck_assert_int_ge(fd = socket(AF_INET, SOCK_STREAM, 0), 0);
		rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
		close(fd);
		if (rc == 0)
			return true;
		nap(50);
	} while (h_now_ms() < end);
	return false;
}

void
h_rig_name(struct h_rig *r, const char *stem, int n)
{
	int i;

	ck_assert(n >= 1 && n <= H_RIG_MAX);
	memset(r, 0, sizeof(*r));
	r->n = n;
	h_name(r->prefix, sizeof(r->prefix), stem);
	for (i = 0; i < n; i++) {
		snprintf(r->q[i], sizeof(r->q[i]), "%s_q%d", r->prefix, i);
		snprintf(r->dlq[i], sizeof(r->dlq[i]), "%s.dlq", r->q[i]);
	}
	snprintf(r->exch, sizeof(r->exch), "%s_x", r->prefix);
	snprintf(r->db, sizeof(r->db), "%s/%s.db", tmpdir(), r->prefix);
}

void
h_rig_setup(struct h_rig *r, const char *extra)
{
	char spec[H_RIG_MAX][160];
	const char *queues[H_RIG_MAX + 1];
	int i;

	for (i = 0; i < r->n; i++) {
		snprintf(spec[i], sizeof(spec[i]), "%s:%d", r->q[i],
		    r->retry_ms[i]);
		queues[i] = spec[i];
	}
	queues[r->n] = NULL;
	r->cfg = h_setup(r->prefix, queues, extra);
	r->c = h_connect();
}

void
h_rig_start(struct h_rig *r)
{
	h_worker_start(&r->w, (const char *[]){ "-c", r->cfg, NULL }, NULL);
	ck_assert(h_worker_wait(&r->w, "control_listening", 1, 20000));
	ck_assert(h_worker_wait(&r->w, "consumer_started", r->n, 20000));
}

void
h_rig_stop(struct h_rig *r)
{
	h_close(r->c);
	ck_assert_int_eq(h_worker_stop(&r->w, 10000, NULL), 0);
}

int
h_digests_with(struct h_worker *w, const char *a, const char *b, int *all)
{
	cJSON **ev;
	const char *t;
	int n, i, found = 0;

	ev = h_worker_events(w, "alert_digest", &n);
	for (i = 0; i < n; i++) {
		t = h_jstr(ev[i], "text");
		found += strstr(t, a) != NULL && (b == NULL || strstr(t, b));
	}
	h_events_free(ev, n);
	if (all != NULL)
		*all = n;
	return found;
}

/* The dead letters the digests' titles count, and how many digests. */
static int
digest_titles(struct h_worker *w, int *digests)
{
	cJSON **ev;
	const char *t;
	int n, i, sum = 0;

	ev = h_worker_events(w, "alert_digest", &n);
	for (i = 0; i < n; i++) {
		t = strstr(h_jstr(ev[i], "text"), ": ");
		if (t != NULL && strncmp(t, ": no new ", 9) != 0)
			sum += atoi(t + 2);
	}
	h_events_free(ev, n);
	*digests = n;
	return sum;
}

bool
h_wait_digest_titles(struct h_worker *w, int want, int timeout_ms,
    int *counted)
{
	int digests;

	while ((*counted = digest_titles(w, &digests)) < want)
		if (!h_worker_wait(w, "alert_digest", digests + 1, timeout_ms))
			return false;
	return true;
}

bool
h_wait_digests_with(struct h_worker *w, const char *a, const char *b,
    int want, int timeout_ms)
{
	int all;

	while (h_digests_with(w, a, b, &all) < want)
		if (!h_worker_wait(w, "alert_digest", all + 1, timeout_ms))
			return false;
	return true;
}

int64_t
h_db_int(const char *db, const char *sql)
{
	sqlite3 *h;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
	    SQLITE_OK);
	sqlite3_busy_timeout(h, 5000);
	if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

const char *
h_pg_url(void)
{
	const char *u = getenv("DLQ_TEST_PG_URL");

	ck_assert_msg(u != NULL && *u != '\0', "DLQ_TEST_PG_URL is not set: "
	    "scripts/test.sh starts the test's PostgreSQL server "
	    "(scripts/postgres.sh) and sets it");
	return u;
}

/* The server's URL with `db` for its database. */
static void
pg_url_of(const char *db, char *out, size_t n)
{
	const char *base = h_pg_url(), *slash = strrchr(base, '/');

	ck_assert_ptr_nonnull(slash);
	snprintf(out, n, "%.*s/%s", (int)(slash - base), base, db);
}

/* Makes database `name` on the test server; one already there is an
 * error unless `may_exist`. */
static void
create_database(const char *name, bool may_exist)
{
	const char *state;
	char sql[256];
	PGconn *c = PQconnectdb(h_pg_url());
	PGresult *res;

	ck_assert_msg(PQstatus(c) == CONNECTION_OK, "test PostgreSQL: %s",
	    PQerrorMessage(c));
	snprintf(sql, sizeof(sql), "CREATE DATABASE \"%s\"", name);
	res = PQexec(c, sql);
	state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK || (may_exist &&
	    state != NULL && strcmp(state, "42P04") == 0), "%s: %s", sql,
	    PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
}

const char *
h_pg_database(const char *name)
{
	static char urls[4][512];
	static int slot;
	char *url = urls[slot++ % 4];

	create_database(name, false);
	pg_url_of(name, url, sizeof(urls[0]));
	return url;
}

/* The URL of database `name`, made when it is not there yet (a rig set
 * up again keeps its archive, as its SQLite file would stay). */
static const char *
pg_database_once(const char *name)
{
	static char url[512];

	create_database(name, true);
	pg_url_of(name, url, sizeof(url));
	return url;
}

int64_t
h_pg_int(const char *url, const char *sql)
{
	PGconn *c = PQconnectdb(url);
	PGresult *res;
	int64_t v = -1;

	if (PQstatus(c) == CONNECTION_OK) {
		res = PQexec(c, sql);
		if (PQresultStatus(res) == PGRES_TUPLES_OK &&
		    PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
			v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		PQclear(res);
	}
	PQfinish(c);
	return v;
}

void
h_pg_control(const char *cmd)
{
	char *out = NULL;
	const char *url = h_pg_url(), *colon = strrchr(url, ':');
	char port[16];

	ck_assert_ptr_nonnull(colon);
	snprintf(port, sizeof(port), "%d", atoi(colon + 1));
	ck_assert_msg(h_run((const char *[]){ "/bin/bash",
	    "scripts/postgres.sh", cmd, port, NULL }, NULL, &out) == 0,
	    "scripts/postgres.sh %s %s: %s", cmd, port, out ? out : "");
	free(out);
}

static size_t
collect_body(char *p, size_t size, size_t n, void *arg)
{
	dlq_buf_add(arg, p, size * n);
	return size * n;
}

long
h_http_get(const char *url, char **body)
{
	struct dlq_buf b;
	long status = 0;
	CURL *h = curl_easy_init();

	dlq_buf_init(&b);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	*body = b.data ? b.data : strdup("");
	return status;
}
