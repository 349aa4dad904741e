/* receiver.h - a real HTTP receiver on loopback for webhook tests.
 *
 * A thread in the test process accepts connections on 127.0.0.1 (a free
 * port), reads each POST whole and answers from a script: a list of
 * statuses (then 200), an optional Retry-After, or no answer at all. Every
 * request is recorded with its arrival time (wall clock, ms) and body. */
#ifndef DLQ_RECEIVER_H
#define DLQ_RECEIVER_H

#include <stdbool.h>
#include <stdint.h>

struct h_receiver;

struct h_request {
	int64_t	 at_ms;		/* wall clock */
	char	 path[256];
	char	*body;		/* NUL-terminated */
	int	 status;	/* what was answered; 0: none */
};

struct h_receiver *h_receiver_start(void);
/* The same over TLS with this certificate (chain) and key: its URLs are
 * https://localhost:PORT/...; a refused handshake counts as a
 * connection, not a request. */
struct h_receiver *h_receiver_start_tls(const char *cert, const char *key);
void	h_receiver_stop(struct h_receiver *);
int	h_receiver_port(const struct h_receiver *);
/* URL for `path` ("/hook/x"), static buffer per slot. */
const char *h_receiver_url(const struct h_receiver *, const char *path);
/* The next `n` requests get `statuses`; later ones 200. */
void	h_receiver_script(struct h_receiver *, const int *statuses, int n,
	    int retry_after_s);
/* Answer every request with `status` (and Retry-After when > 0) until
 * called again with 0: a webhook that is down. */
void	h_receiver_down(struct h_receiver *, int status, int retry_after_s);
/* Accept and read requests but never answer them. */
void	h_receiver_hang(struct h_receiver *, bool);
int	h_receiver_count(struct h_receiver *);
int	h_receiver_connections(struct h_receiver *);
bool	h_receiver_wait(struct h_receiver *, int n, int timeout_ms);
/* Copy of request i (body strdup'd; free it). */
struct h_request h_receiver_get(struct h_receiver *, int i);

int64_t	h_wall_ms(void);

#endif
