/* harness.h - integration test helpers: a real broker, the real worker.
 *
 * The broker URL comes from DLQ_TEST_AMQP_URL (scripts/test.sh starts a
 * private node and sets it, and DLQ_TEST_MANAGEMENT_URL). Every test makes its own queue names with
 * h_name(), so runs never collide. The worker runs as a child process with
 * its JSON log captured in a file; tests wait on log events with a
 * deadline instead of sleeping. */
#ifndef DLQ_HARNESS_H
#define DLQ_HARNESS_H

#include <amqp.h>
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

const char	*h_url(void);
int		 h_port(void);
/* The test broker's management API (DLQ_TEST_MANAGEMENT_URL; scripts/
 * test.sh enables it on the AMQP port + 10000). */
const char	*h_mgmt_url(void);
const char	*h_bin(const char *name);	/* path of build/<name> */
/* The binaries are a sanitizer build (DLQ_BIN names build/san-*): their
 * allocator keeps freed memory, so RSS figures say nothing. */
bool		 h_sanitized(void);
/* The test broker's TLS listener (DLQ_TEST_AMQPS_URL; scripts/test.sh
 * opens it on the AMQP port + 1000, its certificate for localhost and
 * 127.0.0.1) and the CA that signed its certificate (DLQ_TEST_TLS_CA). */
const char	*h_tls_url(void);
/* Its management API over https (DLQ_TEST_MANAGEMENT_TLS_URL; the
 * management port + 1000), with the same certificate. */
const char	*h_mgmt_tls_url(void);
const char	*h_tls_ca(void);
/* Another file next to that CA (scripts/broker.sh makes them): the
 * node's own server.pem and .key, elsewhere.pem and .key (for another
 * host name), dlq-worker.pem and .key (a client). Static, 4 slots. */
const char	*h_tls_file(const char *name);

/* A fresh name: "t<pid>_<seq>_<stem>". Static buffer per call slot. */
void		 h_name(char *out, size_t n, const char *stem);

amqp_connection_state_t h_connect(void);	/* channel 1 open; aborts */
/* A header table entry holding the text `value` (both borrowed). */
amqp_table_entry_t h_str_entry(const char *key, const char *value);
/* A connection to the control socket at `sock` whose reads give up
 * after 20 s; -1 when it cannot connect (usable in a child that became
 * another user). */
int		 h_control_connect(const char *sock);
/* What the worker sends on `fd` up to its first newline or its close
 * (static buffer; "" when it closed without a word). */
const char	*h_control_line(int fd);
void		 h_close(amqp_connection_state_t);

/* Publishes on channel 1; headers may be NULL. */
void		 h_publish(amqp_connection_state_t, const char *exchange,
		    const char *rk, const void *body, size_t len,
		    const char *message_id, const amqp_table_t *headers);
/* Publishes n small persistent messages ("<prefix>-<i>" ids) straight
 * into `queue`, with publisher confirms: when it returns, the broker has
 * them on disk (they survive a kill -9). */
void		 h_fill_confirmed(const char *queue, int n, const char *prefix);
/* basic.get + reject(requeue=false) until n messages were rejected or the
 * deadline passes; returns how many were rejected. */
int		 h_reject(amqp_connection_state_t, const char *queue, int n,
		    int timeout_ms);
/* Gets one message (acked) into *msg; false on timeout. */
bool		 h_get(amqp_connection_state_t, const char *queue,
		    amqp_message_t *msg, int timeout_ms);
/* Messages ready in `queue` (passive declare); -1 when it does not exist. */
int		 h_count(const char *queue);
/* Its consumers, the same way. */
int		 h_consumers(const char *queue);
/* A child process consuming `queue` (basic.consume, prefetch 1): it acks,
 * or with `reject` rejects without requeue, up to n messages, and stops
 * after idle_ms without one. Returns once the broker counts it. */
pid_t		 h_consumer(const char *queue, int n, bool reject, int idle_ms);
/* Waits for that child: how many messages it handled (at most 254). */
int		 h_consumer_done(pid_t);
bool		 h_wait_count(const char *queue, int n, int timeout_ms);

/* Writes a topology file for queues named in `queues` (NULL-terminated,
 * each "name" or "name:retry_ms"), with exchanges <prefix>_x/_dlx, and a
 * worker config using it, with `extra` (may be NULL) appended, e.g. an
 * alert = { ... } group. Returns the config path (static). */
const char	*h_setup(const char *prefix, const char *const *queues,
		    const char *extra);
/* rabbitmq.heartbeat of the configs h_setup() writes next (5 s). */
void		 h_set_heartbeat(int seconds);
/* The broker URL of the configs h_setup() writes next (the test broker's
 * by default) and more settings for their rabbitmq group. */
void		 h_set_broker(const char *url, const char *settings);
/* More settings for the topology files h_setup() writes next, e.g.
 * defaults = { type = "quorum"; }; */
void		 h_set_topology(const char *settings);
const char	*h_write_file(const char *stem, const char *text);
/* A path in the test's private temporary directory (static slot). */
const char	*h_tmp_path(const char *name);
/* The control socket path h_setup() configured for `prefix`. */
const char	*h_socket(const char *prefix);

struct h_worker {
	pid_t	 pid;
	char	 log[256];
	char	 err[256];
};

/* Starts dlq-worker with `args` (NULL-terminated, argv[1..]) and extra
 * environment `env` ("K=V", NULL-terminated; may be NULL). */
void		 h_worker_start(struct h_worker *, const char *const *args,
		    const char *const *env);
/* The same for another program of build/ (e.g. "dlqctl"), or one named
 * by its path ("scripts/run.sh"), in the background: its stdout in
 * w->log, stderr in w->err. */
void		 h_spawn(struct h_worker *, const char *prog,
		    const char *const *args, const char *const *env);
/* Waits until the log holds at least `n` lines with `event`. */
bool		 h_worker_wait(struct h_worker *, const char *event, int n,
		    int timeout_ms);
int		 h_worker_count(struct h_worker *, const char *event);
/* Waits until the worker has logged the `nth` (1-based) dead_letter line
 * whose message_id is `message_id` (logged after its commit, so the
 * record is in the archive) and returns that record's archive id; fails
 * the test after `timeout_ms`. Prefer it to a wait on a total count
 * followed by a read of "the newest": that races as soon as the count
 * is off by one. A replayed message that dies again keeps its id, hence
 * `nth`. */
int64_t		 h_archived(struct h_worker *, const char *message_id,
		    int nth, int timeout_ms);
/* Parsed lines with `event` (caller frees with cJSON_Delete each, free). */
cJSON		**h_worker_events(struct h_worker *, const char *event,
		    int *n);
void		 h_events_free(cJSON **, int);
/* Log-only digests (alert_digest lines) whose text holds `a` and, when
 * not NULL, `b`; *all (may be NULL): every digest so far, from the same
 * read of the log. */
int		 h_digests_with(struct h_worker *, const char *a,
		    const char *b, int *all);
/* Waits digest by digest until `want` of them hold `a` and `b`; false
 * when no further digest came within `timeout_ms`. The count waited for
 * comes from the same read as the search (a digest logged between two
 * reads would otherwise be counted and never searched). */
bool		 h_wait_digests_with(struct h_worker *, const char *a,
		    const char *b, int want, int timeout_ms);
/* Waits digest by digest until the titles of the log-only digests
 * ("host: N dead letters in G groups") count `want` dead letters in all;
 * false when no further digest came within `timeout_ms`. *counted: what
 * they counted then (more than `want`: a digest counted what it should
 * not have). */
bool		 h_wait_digest_titles(struct h_worker *, int want,
		    int timeout_ms, int *counted);
/* Waits for the worker to exit by itself: its status, -1 when killed by a
 * signal, -2 when still running after `timeout_ms`. */
int		 h_worker_exit(struct h_worker *, int timeout_ms);
/* SIGTERM, wait up to `timeout_ms`; the exit status or -1 (killed). */
int		 h_worker_stop(struct h_worker *, int timeout_ms, int64_t *ms);
/* The same with another signal than SIGTERM. */
int		 h_worker_signal(struct h_worker *, int sig, int timeout_ms,
		    int64_t *ms);
/* A memory figure of the worker from /proc ("VmHWM:" peak, "VmRSS:"
 * now), KiB; -1 when it cannot be read. */
long		 h_worker_kib(const struct h_worker *, const char *field);
/* Runs a program to completion, capturing stdout and stderr into one
 * malloc'd string; returns the exit status. */
int		 h_run(const char *const *argv, const char *const *env,
		    char **out);

/* The same with stdout and stderr apart (either pointer may be NULL). */
int		 h_run_split(const char *const *argv, const char *const *env,
		    char **out, char **err);
/* Runs `dlqctl -c cfg --json ARGS...` (as `user` when not NULL) and
 * parses its stdout; *json is NULL when stdout is not JSON. Returns the
 * exit status. */
int		 h_dlqctl(const char *cfg, const char *user, cJSON **json,
		    const char *const *args);
/* A test's own topology: n work queues "<prefix>_q<i>" (at most
 * H_RIG_MAX), each with its DLQ "<q>.dlq", on the exchange "<prefix>_x";
 * the archive h_setup() configures ("<tmp>/<prefix>.db"); the worker
 * config, a connection and the worker. */
#define H_RIG_MAX	3
struct h_rig {
	char			 prefix[64], exch[96], db[256];
	char			 q[H_RIG_MAX][128], dlq[H_RIG_MAX][160];
	int			 retry_ms[H_RIG_MAX];	/* 0: no retry queue */
	int			 n;
	const char		*cfg;
	struct h_worker		 w;
	amqp_connection_state_t	 c;
};

/* Names the rig's n queues; a config may then be built from the names. */
void		 h_rig_name(struct h_rig *, const char *stem, int n);
/* Writes its topology and config (`extra` as for h_setup) and connects.
 * The worker is not started. */
void		 h_rig_setup(struct h_rig *, const char *extra);
/* Starts the worker and waits for its control socket and n consumers. */
void		 h_rig_start(struct h_rig *);
/* Closes the connection; the worker must exit 0 on SIGTERM. */
void		 h_rig_stop(struct h_rig *);

/* Makes the test's temporary directory and binaries usable by other
 * users (for role tests); returns the path of the dlqctl they can run. */
const char	*h_share_tmpdir(void);

/* A string member ("" when absent or not a string) and a number member
 * (-1 when absent or not a number) of a JSON object. */
const char	*h_jstr(const cJSON *, const char *key);
int64_t		 h_jnum(const cJSON *, const char *key);

char		*h_slurp(const char *path);
/* A loopback TCP port nothing listens on (the kernel's pick, released). */
int		 h_free_port(void);
/* rabbitmqctl against the test node (scripts/broker.sh ctl), up to 11
 * arguments; its exit status, its output (malloc'd) in *out. */
int		 h_broker_ctl(const char *const *args, char **out);
/* rabbitmqctl set_policy `name` (def: its JSON definition) for exactly
 * `queue` on the test node, waiting until the queue, if declared, lists
 * it (the broker applies a policy to its queues after the command
 * returns; to one declared later, at once); or
 * clear_policy `name` when def is NULL (queue unused). */
void		 h_queue_policy(const char *name, const char *queue,
		    const char *def);
/* How many connections the test broker lists with the client-given
 * name `name` (rabbitmqctl list_connections); the first one's `column`
 * (e.g. ssl, peer_cert_subject) into `value`. */
int		 h_connection_info(const char *name, const char *column,
		    char *value, size_t n);
/* Whether something accepts connections on the loopback `port` within
 * `timeout_ms` (it is connected to once, and the connection closed). */
bool		 h_wait_listening(int port, int timeout_ms);
/* GET `url`: the status (0: no answer) and the body in *body (free it). */
long		 h_http_get(const char *url, char **body);
int64_t		 h_now_ms(void);
/* The first column of the first row `sql` answers in the archive `db`
 * (read-only, as another process would), e.g. a count; -1 when it
 * answers none. */
int64_t		 h_db_int(const char *db, const char *sql);

/* The test PostgreSQL server (DLQ_TEST_PG_URL: scripts/test.sh starts a
 * private one, scripts/postgres.sh, and sets it); the test fails when
 * it is not set. */
const char	*h_pg_url(void);
/* DLQ_TEST_ARCHIVE=postgres: every rig archives into a database of its
 * own on the test PostgreSQL server instead of an SQLite file (the
 * archive-agnostic programs run again so, scripts/test.sh). */
bool		 h_archive_is_postgres(void);
/* A new empty database on it named `name` (h_name()); its URL (static
 * slot, 4 of them). */
const char	*h_pg_database(const char *name);
/* The first column of the first row `sql` answers in the database at
 * `url`, as a number; -1 when it answers none or fails. */
int64_t		 h_pg_int(const char *url, const char *sql);
/* scripts/postgres.sh `cmd` (restart, freeze, thaw) on the test server;
 * fails the test when it fails. */
void		 h_pg_control(const char *cmd);

#endif
