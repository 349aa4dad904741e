/* amqp.c - connect, log in and diagnose with rabbitmq-c 0.11. */
#include "amqp.h"

#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

#include "log.h"
#include "tcpprobe.h"
#include "url.h"

#define CONNECT_TIMEOUT_S	10
#define RPC_TIMEOUT_S		30
#define PROBE_TIMEOUT_MS	2000	/* per address, on the error path */
#define MAX_NODES		17	/* the URL's and 16 of rabbitmq.hosts */
/* rabbitmq-c opens a connection with a 64 KiB output buffer and
 * reallocates it to the negotiated frame size. Once a flood has left
 * malloc with free memory, growing it copies the 64 KiB into a new block,
 * where they stay resident for the connection's life (1.8 MiB over the
 * 37 connections replaced after a flood). At 64 KiB nothing is
 * reallocated; larger bodies take more frames, which costs nothing
 * measurable. */
#define FRAME_MAX		65536

static amqp_table_entry_t
bool_entry(const char *k, bool v)
{
	amqp_table_entry_t e;

	e.key = amqp_cstring_bytes(k);
	e.value.kind = AMQP_FIELD_KIND_BOOLEAN;
	e.value.value.boolean = v;
	return e;
}

static amqp_table_entry_t
str_entry(const char *k, const char *v)
{
	amqp_table_entry_t e;

	e.key = amqp_cstring_bytes(k);
	e.value.kind = AMQP_FIELD_KIND_UTF8;
	e.value.value.bytes = amqp_cstring_bytes(v);
	return e;
}

const char *
dlq_amqp_reply_text(amqp_rpc_reply_t r, char *buf, size_t n)
{
	switch (r.reply_type) {
	case AMQP_RESPONSE_NORMAL:
		snprintf(buf, n, "ok");
		break;
	case AMQP_RESPONSE_NONE:
		snprintf(buf, n, "missing RPC reply");
		break;
	case AMQP_RESPONSE_LIBRARY_EXCEPTION:
		snprintf(buf, n, "%s", amqp_error_string2(r.library_error));
		break;
	case AMQP_RESPONSE_SERVER_EXCEPTION:
		if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
			amqp_connection_close_t *m = r.reply.decoded;
			snprintf(buf, n, "connection closed by broker: %u %.*s",
			    m->reply_code, (int)m->reply_text.len,
			    (char *)m->reply_text.bytes);
		} else if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
			amqp_channel_close_t *m = r.reply.decoded;
			snprintf(buf, n, "channel closed by broker: %u %.*s",
			    m->reply_code, (int)m->reply_text.len,
			    (char *)m->reply_text.bytes);
		} else
			snprintf(buf, n, "broker error, method 0x%08x",
			    r.reply.id);
		break;
	}
	return buf;
}

bool
dlq_amqp_is_channel_error(amqp_rpc_reply_t r, int *code)
{
	if (r.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
	    r.reply.id != AMQP_CHANNEL_CLOSE_METHOD)
		return false;
	if (code != NULL)
		*code = ((amqp_channel_close_t *)r.reply.decoded)->reply_code;
	return true;
}

int
dlq_amqp_reopen_channel(amqp_connection_state_t conn)
{
	amqp_channel_close_ok_t ok;

	memset(&ok, 0, sizeof(ok));
	if (amqp_send_method(conn, DLQ_AMQP_CHANNEL,
	    AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) != AMQP_STATUS_OK)
		return -1;
	amqp_maybe_release_buffers(conn);
	amqp_channel_open(conn, DLQ_AMQP_CHANNEL);
	return amqp_get_rpc_reply(conn).reply_type == AMQP_RESPONSE_NORMAL ?
	    0 : -1;
}

/* Why the broker's certificate failed verification: OpenSSL's first
 * complaint about its chain during this thread's last TLS handshake
 * (rabbitmq-c only says that it failed). */
static __thread int cert_error;

/* A node of the cluster: the URL's host, or one of rabbitmq.hosts. */
struct node {
	char	host[256];
	int	port;
};

/* The node the last connection reached: the next one tries it first. */
static atomic_uint preferred;

static int
note_cert_error(int ok, X509_STORE_CTX *x)
{
	if (!ok && cert_error == X509_V_OK)
		cert_error = X509_STORE_CTX_get_error(x);
	return ok;
}

/* The broker's certificate must be for the URL's host: OpenSSL checks
 * it during the chain's verification, an IP address against the
 * certificate's IP addresses (rabbitmq-c's own check knows host names
 * only, and would refuse a certificate issued for 10.0.0.5). */
static int
expect_host(SSL_CTX *ctx, const char *host)
{
	X509_VERIFY_PARAM *p = SSL_CTX_get0_param(ctx);
	unsigned char addr[16];

	X509_VERIFY_PARAM_set_hostflags(p,
	    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (inet_pton(AF_INET, host, addr) == 1 ||
	    inet_pton(AF_INET6, host, addr) == 1)
		return X509_VERIFY_PARAM_set1_ip_asc(p, host) == 1 ? 0 : -1;
	return X509_VERIFY_PARAM_set1_host(p, host, 0) == 1 ? 0 : -1;
}

/* The CAs a broker's certificate is checked against: the configured CA
 * file, or the system's (rabbitmq-c 0.11 loads none by itself). Loaded
 * once and shared by every connection's SSL_CTX: the system's bundle of
 * some 140 CAs in each of 37 would take 30 MiB. A CA file that changed
 * (a rotation) is loaded again for the next connection. */
static pthread_mutex_t trust_lock = PTHREAD_MUTEX_INITIALIZER;
static X509_STORE *trust;
static char *trust_file;		/* the file `trust` holds; NULL: the
					   system's CAs */
static struct stat trust_stat;		/* trust_file when it was loaded */

static bool
same_file(const char *file)
{
	struct stat st;

	if ((file == NULL) != (trust_file == NULL))
		return false;
	if (file == NULL)
		return true;
	return strcmp(file, trust_file) == 0 && stat(file, &st) == 0 &&
	    st.st_dev == trust_stat.st_dev && st.st_ino == trust_stat.st_ino &&
	    st.st_size == trust_stat.st_size &&
	    st.st_mtim.tv_sec == trust_stat.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == trust_stat.st_mtim.tv_nsec;
}

static int
trust_cas(SSL_CTX *ctx, const char *file, char *why, size_t whylen)
{
	X509_STORE *s;
	struct stat st;
	const char *e;
	int rc = 0;

	pthread_mutex_lock(&trust_lock);
	if (trust == NULL || !same_file(file)) {
		if (file == NULL || stat(file, &st) != 0)
			memset(&st, 0, sizeof(st));
		if ((s = X509_STORE_new()) == NULL ||
		    (file != NULL ? X509_STORE_load_file(s, file) :
		    X509_STORE_set_default_paths(s)) != 1) {
			e = ERR_reason_error_string(ERR_peek_last_error());
			if (file != NULL)
				snprintf(why, whylen, "cannot load CA file %s: "
				    "%s", file, e != NULL ? e : "not PEM");
			else
				snprintf(why, whylen, "cannot load the "
				    "system's CA certificates (set rabbitmq."
				    "tls_ca_cert)");
			X509_STORE_free(s);
			rc = -1;
			goto out;
		}
		X509_STORE_free(trust);
		free(trust_file);
		trust = s;
		trust_file = file != NULL ? strdup(file) : NULL;
		trust_stat = st;
	}
	SSL_CTX_set1_cert_store(ctx, trust);
out:
	pthread_mutex_unlock(&trust_lock);
	return rc;
}

/* An encrypted key file would make OpenSSL ask for its pass phrase on
 * the terminal, at every connection of every consumer: refused instead,
 * and said so. */
static __thread bool pass_phrase_asked;

static int
no_pass_phrase(char *buf, int size, int rwflag, void *arg)
{
	(void)buf, (void)size, (void)rwflag, (void)arg;
	pass_phrase_asked = true;
	return -1;
}

/* The client certificate and key, for a broker that verifies its
 * clients (ssl_options.verify = verify_peer). */
static int
present_certificate(const struct dlq_config *c, amqp_socket_t *sock,
    SSL_CTX *ctx, char *why, size_t whylen)
{
	const char *e;

	SSL_CTX_set_default_passwd_cb(ctx, no_pass_phrase);
	pass_phrase_asked = false;
	if (amqp_ssl_socket_set_key(sock, c->tls_cert, c->tls_key) ==
	    AMQP_STATUS_OK)
		return 0;
	e = pass_phrase_asked ? "the key is encrypted, and no pass phrase "
	    "can be given: store it decrypted, readable by the worker's user "
	    "only" : ERR_reason_error_string(ERR_peek_last_error());
	snprintf(why, whylen, "cannot use client certificate %s with key %s: "
	    "%s", c->tls_cert, c->tls_key, e != NULL ? e : "not PEM");
	return -1;
}

/* A TLS socket that trusts the configured CA file, or the system's CAs,
 * and verifies the broker's certificate and host name unless told not
 * to; it presents a client certificate when one is configured. */
static amqp_socket_t *
tls_socket(const struct dlq_config *c, const char *host,
    amqp_connection_state_t conn, enum dlq_amqp_status *status, char *why,
    size_t whylen)
{
	amqp_socket_t *sock;
	SSL_CTX *ctx;

	if ((sock = amqp_ssl_socket_new(conn)) == NULL)
		return NULL;
	ERR_clear_error();
	amqp_ssl_socket_set_verify_peer(sock, c->tls_verify);
	amqp_ssl_socket_set_verify_hostname(sock, false);
	ctx = amqp_ssl_socket_get_context(sock);
	if (c->tls_verify && expect_host(ctx, host) == -1) {
		snprintf(why, whylen, "cannot verify host name '%s'", host);
		*status = DLQ_AMQP_FATAL;
		return NULL;
	}
	/* rabbitmq-c checks the result after the handshake: the mode stays
	 * SSL_VERIFY_NONE, the callback only listens */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, note_cert_error);
	/* an idle consumer's connection gives its TLS buffers back */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	if (trust_cas(ctx, c->tls_ca_cert, why, whylen) == -1 ||
	    (c->tls_cert != NULL &&
	    present_certificate(c, sock, ctx, why, whylen) == -1)) {
		*status = DLQ_AMQP_FATAL;
		return NULL;
	}
	cert_error = X509_V_OK;
	return sock;
}

/* A certificate that fails verification will not pass at the next try:
 * the configuration or the broker's certificate has to change. */
static void
cert_refused(const struct dlq_config *c, const struct node *n, char *why,
    size_t whylen)
{
	if (cert_error == X509_V_ERR_HOSTNAME_MISMATCH ||
	    cert_error == X509_V_ERR_IP_ADDRESS_MISMATCH)
		snprintf(why, whylen, "the broker's certificate at %s:%d is "
		    "not for the host name '%s': connect by a name the "
		    "certificate holds", n->host, n->port, n->host);
	else
		snprintf(why, whylen, "the broker's certificate at %s:%d is "
		    "not trusted: %s (trusted: %s%s)", n->host, n->port,
		    cert_error != X509_V_OK ?
		    X509_verify_cert_error_string(cert_error) :
		    "no certificate", c->tls_ca_cert != NULL ? "the CAs in " :
		    "the system's CAs; rabbitmq.tls_ca_cert names a CA file",
		    c->tls_ca_cert != NULL ? c->tls_ca_cert : "");
}

/* The nodes to connect to: the URL's, then rabbitmq.hosts. */
static size_t
nodes(const struct dlq_config *c, struct node *out, size_t max)
{
	size_t n = 0, i;

	snprintf(out[n].host, sizeof(out[n].host), "%s", c->broker.host);
	out[n++].port = c->broker.port;
	for (i = 0; i < c->hosts.n && n < max; i++)
		if (dlq_url_host_port(c->hosts.v[i], c->broker.port,
		    out[n].host, sizeof(out[n].host), &out[n].port) == NULL)
			n++;
	return n;
}

static enum dlq_amqp_status
login_status(amqp_rpc_reply_t r)
{
	if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION)
		return DLQ_AMQP_FATAL;	/* 403 access refused, 530 vhost */
	return DLQ_AMQP_RETRY;
}

/* What to add to a failed login's reason: on a plain port, what
 * answered the socket did not speak AMQP 0-9-1 (the usual slips are a
 * TLS port or the management API's), or it took the connection and
 * said nothing (a node frozen, swapping, or a port of another service
 * that waits). */
static const char *
login_hint(amqp_rpc_reply_t r, bool tls)
{
	if (r.reply_type != AMQP_RESPONSE_LIBRARY_EXCEPTION || tls)
		return "";
	if (r.library_error == AMQP_STATUS_TIMEOUT)
		return " (the port took the connection but nothing answered: a "
		    "broker frozen or overloaded, or not an AMQP listener)";
	return " (is the port an AMQP listener? amqp:// is usually 5672, "
	    "amqps:// 5671, the management API 15672 is not one)";
}

/* Why the socket to node `n` could not be opened: rabbitmq-c's words,
 * with what they leave out. A "socket error" is a failed TCP connect
 * whose errno the library dropped: connecting again says which. */
static const char *
connect_failure(int rc, const struct node *n, char *buf, size_t len)
{
	int err;

	if (rc == AMQP_STATUS_SSL_CONNECTION_FAILED) {
		snprintf(buf, len, "%s (is the port a TLS listener? amqps:// "
		    "is usually 5671, amqp:// 5672)", amqp_error_string2(rc));
		return buf;
	}
	if (rc == AMQP_STATUS_SOCKET_ERROR &&
	    (err = dlq_tcp_probe(n->host, n->port, PROBE_TIMEOUT_MS)) != 0)
		return dlq_tcp_probe_text(err, buf, len);
	return amqp_error_string2(rc);
}

/* A connection to node `n`: socket (TLS as configured), login, channel.
 * NULL with the reason in `why`; `status` FATAL when trying again cannot
 * help (a refused certificate or login, a configuration error). */
static amqp_connection_state_t
connect_node(const struct dlq_config *c, const char *name,
    const struct node *n, enum dlq_amqp_status *status, char *why,
    size_t whylen)
{
	amqp_connection_state_t conn;
	amqp_socket_t *sock;
	amqp_table_entry_t caps[5], props[4];
	amqp_table_t caps_t, props_t;
	struct timeval tv = { CONNECT_TIMEOUT_S, 0 };
	struct timeval rpc = { RPC_TIMEOUT_S, 0 };
	amqp_rpc_reply_t r;
	char tmp[256];
	bool external, v6;
	int rc;

	*status = DLQ_AMQP_RETRY;
	if ((conn = amqp_new_connection()) == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	sock = c->broker.tls ? tls_socket(c, n->host, conn, status, why,
	    whylen) : amqp_tcp_socket_new(conn);
	if (sock == NULL) {
		if (*status != DLQ_AMQP_FATAL)
			snprintf(why, whylen, "cannot create socket");
		goto fail;
	}
	rc = amqp_socket_open_noblock(sock, n->host, n->port, &tv);
	if (rc == AMQP_STATUS_SSL_PEER_VERIFY_FAILED) {
		cert_refused(c, n, why, whylen);
		*status = DLQ_AMQP_FATAL;
		goto fail;
	}
	if (rc != AMQP_STATUS_OK) {
		/* an IPv6 address in brackets, as in a URL */
		v6 = strchr(n->host, ':') != NULL;
		snprintf(why, whylen, "cannot connect to %s%s%s:%d: %s",
		    v6 ? "[" : "", n->host, v6 ? "]" : "", n->port,
		    connect_failure(rc, n, tmp, sizeof(tmp)));
		goto fail;
	}
	amqp_set_handshake_timeout(conn, &tv);
	amqp_set_rpc_timeout(conn, &rpc);

	caps[0] = bool_entry("consumer_cancel_notify", true);
	caps[1] = bool_entry("connection.blocked", true);
	caps[2] = bool_entry("publisher_confirms", true);
	caps[3] = bool_entry("basic.nack", true);
	caps[4] = bool_entry("authentication_failure_close", true);
	caps_t.num_entries = 5;
	caps_t.entries = caps;
	props[0] = str_entry("product", "dlq-monitor");
	props[1] = str_entry("connection_name", name);
	props[2].key = amqp_cstring_bytes("capabilities");
	props[2].value.kind = AMQP_FIELD_KIND_TABLE;
	props[2].value.value.table = caps_t;
	props[3] = str_entry("platform", "C, rabbitmq-c");
	props_t.num_entries = 4;
	props_t.entries = props;

	/* EXTERNAL: the broker takes the user from the client certificate
	 * and ignores the identity sent (rabbitmq-c cannot send an empty
	 * one: the URL's user goes) */
	external = strcmp(c->auth, "external") == 0;
	r = external ? amqp_login_with_properties(conn, c->broker.vhost, 0,
	    FRAME_MAX, (int)c->heartbeat_s, &props_t,
	    AMQP_SASL_METHOD_EXTERNAL, c->broker.user) :
	    amqp_login_with_properties(conn, c->broker.vhost, 0, FRAME_MAX,
	    (int)c->heartbeat_s, &props_t, AMQP_SASL_METHOD_PLAIN,
	    c->broker.user, c->broker.password);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		*status = login_status(r);
		snprintf(why, whylen, "login to %s:%d vhost %s as %s failed: "
		    "%s%s", n->host, n->port, c->broker.vhost,
		    external ? "the client certificate's user" :
		    c->broker.user, dlq_amqp_reply_text(r, tmp, sizeof(tmp)),
		    login_hint(r, c->broker.tls));
		goto fail;
	}
	amqp_channel_open(conn, DLQ_AMQP_CHANNEL);
	r = amqp_get_rpc_reply(conn);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		snprintf(why, whylen, "cannot open channel on %s:%d: %s",
		    n->host, n->port, dlq_amqp_reply_text(r, tmp, sizeof(tmp)));
		goto fail;
	}
	*status = DLQ_AMQP_OK;
	return conn;
fail:
	amqp_destroy_connection(conn);
	return NULL;
}

/* Tries the nodes: the one the last connection reached first, then the
 * others in order, until one takes the connection. A node that does not
 * is passed over (broker_failover says so when another one did), unless
 * trying again cannot help anywhere (a refused certificate or login). */
amqp_connection_state_t
dlq_amqp_connect(const struct dlq_config *c, const char *name,
    enum dlq_amqp_status *status, char *why, size_t whylen)
{
	struct node all[MAX_NODES];
	size_t n = nodes(c, all, MAX_NODES), k, i, used = 0;
	unsigned first = atomic_load(&preferred);
	amqp_connection_state_t conn;
	char tried[1024] = "", node[300];

	for (k = 0; k < n; k++) {
		i = (first + k) % n;
		conn = connect_node(c, name, &all[i], status, why, whylen);
		if (conn != NULL) {
			atomic_store(&preferred, (unsigned)i);
			if (k > 0) {
				snprintf(node, sizeof(node), "%s:%d",
				    all[i].host, all[i].port);
				dlq_log(DLQ_LOG_INFO, "broker_failover",
				    "connection", name, "node", node,
				    "unreachable", tried, NULL);
			}
			return conn;
		}
		if (*status == DLQ_AMQP_FATAL || n == 1)
			return NULL;
		used += (size_t)snprintf(tried + used, sizeof(tried) - used,
		    "%s%s", used ? "; " : "", why);
		if (used >= sizeof(tried))
			used = sizeof(tried) - 1;
	}
	snprintf(why, whylen, "no node answered: %s", tried);
	return NULL;
}

void
dlq_amqp_close(amqp_connection_state_t conn)
{
	struct timeval tv = { 1, 0 };

	if (conn == NULL)
		return;
	/* Never wait long on a peer that may be gone. */
	amqp_set_rpc_timeout(conn, &tv);
	amqp_channel_close(conn, DLQ_AMQP_CHANNEL, AMQP_REPLY_SUCCESS);
	amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(conn);
}

int64_t
dlq_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
dlq_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
dlq_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
dlq_amqp_backoff_ms(unsigned attempt, int64_t min, int64_t max)
{
	int64_t cap = min;
	unsigned i;

	for (i = 0; i < attempt && cap < max; i++)
		cap *= 2;
	if (cap > max)
		cap = max;
	if (cap <= min)
		return min;
	/* jitter: rand_r-free arc4random is not in glibc 2.36; random() is
	 * fine here, nothing depends on its quality */
	return min + random() % (cap - min + 1);
}

void
dlq_sleep_ms(int64_t ms, const atomic_bool *stop)
{
	int64_t end = dlq_now_ms() + ms, left;
	struct timespec ts;

	while (!*stop && (left = end - dlq_now_ms()) > 0) {
		if (left > 100)
			left = 100;
		ts.tv_sec = 0;
		ts.tv_nsec = left * 1000000;
		nanosleep(&ts, NULL);
	}
}
