/* receiver.c - see receiver.h. A deliberately small HTTP/1.1 server:
 * one request per connection (it answers Connection: close), over TLS
 * (OpenSSL) when started with a certificate. */
#include "receiver.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_REQ		256
#define MAX_SCRIPT	16
#define MAX_HUNG	64

struct h_receiver {
	int		 fd;
	int		 port;
	SSL_CTX		*tls;		/* NULL: plain HTTP */
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	atomic_bool	 stop;
	int		 script[MAX_SCRIPT];
	int		 down_status;	/* answer to every request; 0: off */
	int		 n_script, next_script;
	int		 retry_after_s;
	bool		 hang;
	int		 hung[MAX_HUNG];
	int		 n_hung;
	int		 connections;
	struct h_request req[MAX_REQ];
	int		 n_req;
};

int64_t
h_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One accepted connection: its socket, and its TLS session if any. */
struct conn {
	int	 fd;
	SSL	*ssl;
};

/* Up to `n` bytes, waiting at most 3 s; <= 0: closed, failed or quiet. */
static ssize_t
conn_read(struct conn *c, char *buf, size_t n)
{
	struct pollfd p = { c->fd, POLLIN, 0 };

	if ((c->ssl == NULL || SSL_pending(c->ssl) == 0) &&
	    poll(&p, 1, 3000) <= 0)
		return -1;
	if (c->ssl == NULL)
		return read(c->fd, buf, n);
	return SSL_read(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
}

static void
conn_write(struct conn *c, const char *s, size_t n)
{
	if (c->ssl != NULL ? SSL_write(c->ssl, s, (int)n) <= 0 :
	    write(c->fd, s, n) < 0)
		perror("receiver write");
}

static void
conn_close(struct conn *c)
{
	if (c->ssl != NULL) {
		SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	close(c->fd);
}

/* Reads one request; returns the body (malloc'd) or NULL. */
static char *
read_request(struct conn *c, char *path, size_t pathlen)
{
	char *buf = malloc(1 << 20), *end, *cl;
	size_t len = 0, want = 0, head = 0;
	ssize_t n;

	while (len < (1 << 20) - 1) {
		if ((n = conn_read(c, buf + len, (1 << 20) - 1 - len)) <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (head == 0 && (end = strstr(buf, "\r\n\r\n")) != NULL) {
			head = (size_t)(end - buf) + 4;
			for (cl = buf; cl < end; cl++)
				if (strncasecmp(cl, "\r\nContent-Length:", 17) == 0)
					want = (size_t)atol(cl + 17);
			sscanf(buf, "%*s %255s", path);
			(void)pathlen;
		}
		if (head != 0 && len >= head + want) {
			memmove(buf, buf + head, want);
			buf[want] = '\0';
			return buf;
		}
	}
	free(buf);
	return NULL;
}

static void
serve(struct h_receiver *r, struct conn *c)
{
	char path[256] = "", resp[256], extra[64];
	char *body = read_request(c, path, sizeof(path));
	int status = 200, k, retry_after;
	bool hang;

	pthread_mutex_lock(&r->mu);
	r->connections++;
	hang = r->hang;
	retry_after = r->retry_after_s;	/* the test thread may change it */
	if (body != NULL && r->n_req < MAX_REQ) {
		if (!hang && r->down_status != 0)
			status = r->down_status;
		else if (!hang && r->next_script < r->n_script)
			status = r->script[r->next_script++];
		k = r->n_req++;
		r->req[k].at_ms = h_wall_ms();
		snprintf(r->req[k].path, sizeof(r->req[k].path), "%s", path);
		r->req[k].body = body;
		r->req[k].status = hang ? 0 : status;
		body = NULL;
	}
	if (hang && r->n_hung < MAX_HUNG) {
		ck_assert_ptr_null(c->ssl);	/* hanging is plain HTTP's */
		r->hung[r->n_hung++] = c->fd;
		pthread_mutex_unlock(&r->mu);
		free(body);
		return;
	}
	pthread_mutex_unlock(&r->mu);
	free(body);
	extra[0] = '\0';
	if ((status == 429 || status == 503) && retry_after > 0)
		snprintf(extra, sizeof(extra), "Retry-After: %d\r\n",
		    retry_after);
	snprintf(resp, sizeof(resp), "HTTP/1.1 %d Status\r\nContent-Length: 2"
	    "\r\n%sConnection: close\r\n\r\nok", status, extra);
	conn_write(c, resp, strlen(resp));
	conn_close(c);
}

static void *
run(void *arg)
{
	struct h_receiver *r = arg;
	struct pollfd p = { r->fd, POLLIN, 0 };
	struct timeval quiet = { 3, 0 };	/* a handshake that stalls */
	struct conn c;

	while (!r->stop) {
		if (poll(&p, 1, 50) <= 0)
			continue;
		if ((c.fd = accept(r->fd, NULL, NULL)) < 0)
			continue;
		c.ssl = NULL;
		if (r->tls != NULL) {
			setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &quiet,
			    sizeof(quiet));
			c.ssl = SSL_new(r->tls);
			SSL_set_fd(c.ssl, c.fd);
			if (SSL_accept(c.ssl) != 1) {	/* e.g. refused by the
							 * client: counted */
				pthread_mutex_lock(&r->mu);
				r->connections++;
				pthread_mutex_unlock(&r->mu);
				SSL_free(c.ssl);
				close(c.fd);
				continue;
			}
		}
		serve(r, &c);
	}
	return NULL;
}

static struct h_receiver *
receiver_start(SSL_CTX *tls)
{
	struct h_receiver *r = calloc(1, sizeof(*r));
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);

	ck_assert_ptr_nonnull(r);
	r->tls = tls;
	pthread_mutex_init(&r->mu, NULL);
	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(r->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(r->fd, 64), 0);
	getsockname(r->fd, (struct sockaddr *)&a, &alen);
	r->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&r->thread, NULL, run, r), 0);
	return r;
}

struct h_receiver *
h_receiver_start(void)
{
	return receiver_start(NULL);
}

struct h_receiver *
h_receiver_start_tls(const char *cert, const char *key)
{
	SSL_CTX *tls = SSL_CTX_new(TLS_server_method());

	ck_assert_ptr_nonnull(tls);
	ck_assert_int_eq(SSL_CTX_use_certificate_chain_file(tls, cert), 1);
	ck_assert_int_eq(SSL_CTX_use_PrivateKey_file(tls, key,
	    SSL_FILETYPE_PEM), 1);
	return receiver_start(tls);
}

void
h_receiver_stop(struct h_receiver *r)
{
	int i;

	r->stop = true;
	pthread_join(r->thread, NULL);
	close(r->fd);
	SSL_CTX_free(r->tls);
	for (i = 0; i < r->n_hung; i++)
		close(r->hung[i]);
	for (i = 0; i < r->n_req; i++)
		free(r->req[i].body);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

int
h_receiver_port(const struct h_receiver *r)
{
	return r->port;
}

const char *
h_receiver_url(const struct h_receiver *r, const char *path)
{
	static char urls[4][300];
	static int slot;
	char *u = urls[slot++ % 4];

	if (r->tls != NULL)	/* the name its certificate holds */
		snprintf(u, 300, "https://localhost:%d%s", r->port, path);
	else
		snprintf(u, 300, "http://127.0.0.1:%d%s", r->port, path);
	return u;
}

void
h_receiver_script(struct h_receiver *r, const int *statuses, int n,
    int retry_after_s)
{
	pthread_mutex_lock(&r->mu);
	memcpy(r->script, statuses, (size_t)n * sizeof(int));
	r->n_script = n;
	r->next_script = 0;
	r->retry_after_s = retry_after_s;
	pthread_mutex_unlock(&r->mu);
}

void
h_receiver_down(struct h_receiver *r, int status, int retry_after_s)
{
	pthread_mutex_lock(&r->mu);
	r->down_status = status;
	r->retry_after_s = retry_after_s;
	pthread_mutex_unlock(&r->mu);
}

void
h_receiver_hang(struct h_receiver *r, bool on)
{
	pthread_mutex_lock(&r->mu);
	r->hang = on;
	pthread_mutex_unlock(&r->mu);
}

int
h_receiver_count(struct h_receiver *r)
{
	int n;

	pthread_mutex_lock(&r->mu);
	n = r->n_req;
	pthread_mutex_unlock(&r->mu);
	return n;
}

int
h_receiver_connections(struct h_receiver *r)
{
	int n;

	pthread_mutex_lock(&r->mu);
	n = r->connections;
	pthread_mutex_unlock(&r->mu);
	return n;
}

bool
h_receiver_wait(struct h_receiver *r, int n, int timeout_ms)
{
	int64_t end = h_wall_ms() + timeout_ms;
	struct timespec ts = { 0, 20 * 1000000 };

	while (h_receiver_count(r) < n) {
		if (h_wall_ms() > end)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

struct h_request
h_receiver_get(struct h_receiver *r, int i)
{
	struct h_request q;

	pthread_mutex_lock(&r->mu);
	ck_assert_int_lt(i, r->n_req);
	q = r->req[i];
	q.body = strdup(r->req[i].body);
	pthread_mutex_unlock(&r->mu);
	return q;
}
