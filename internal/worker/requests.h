/* requests.h - the control socket's requests, one line each. */
#ifndef DLQ_REQUESTS_H
#define DLQ_REQUESTS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "config.h"
#include "proto.h"

/* Handles one request line from a peer with `role` named `user` and
 * appends the response line (with "\n"). Used by the thread and by the
 * request-parser fuzzer. `archive` may be NULL (then data commands fail).
 * `peer` is the peer's socket, for the progress lines of a long request
 * that asks for them ("progress":true: a purge), sent before the
 * response; -1: none are sent. */
struct dlq_archive;
void	dlq_requests_handle(const struct dlq_config *, struct dlq_archive *,
	    const char *line, size_t len, enum dlq_role role, const char *user,
	    long uid, int peer, struct dlq_buf *out);

/* Sends all of `p` to socket `fd` (no SIGPIPE; retried on EINTR);
 * false when the peer is gone or the send timed out. */
bool	dlq_requests_send(int fd, const char *p, size_t n);

#endif
