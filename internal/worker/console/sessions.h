/* sessions.h - the console's browser sessions and its login limiter.
 *
 * A login (a token typed into the form) makes a session: a random id in
 * an HttpOnly cookie and a random CSRF token the page sends back in a
 * header with each change. Sessions live in the worker's memory (a
 * restart signs everyone out) for console.session_ms, at most
 * DLQ_SESSIONS_MAX at once (the oldest goes). Failed logins are counted
 * per client address: past DLQ_LOGIN_FAILS in DLQ_LOGIN_WINDOW_MS that
 * address is refused until its window ends. Used by the HTTP thread only. */
#ifndef DLQ_CONSOLE_SESSIONS_H
#define DLQ_CONSOLE_SESSIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "users.h"

#define DLQ_SESSIONS_MAX	256
#define DLQ_SESSION_ID_LEN	64	/* hex */
#define DLQ_CSRF_LEN		32	/* hex */
#define DLQ_LOGIN_FAILS		10
#define DLQ_LOGIN_WINDOW_MS	(5 * 60 * 1000)

struct dlq_session {
	char			 id[DLQ_SESSION_ID_LEN + 1];
	char			 csrf[DLQ_CSRF_LEN + 1];
	struct dlq_console_user	 user;
	int64_t			 expires_ms;	/* 0: slot free */
};

struct dlq_sessions;

struct dlq_sessions *dlq_sessions_new(int64_t ttl_ms);
void	dlq_sessions_free(struct dlq_sessions *);
/* A new session of `user`; NULL when the kernel gave no random bytes. */
const struct dlq_session *dlq_sessions_open(struct dlq_sessions *,
	    const struct dlq_console_user *, int64_t now);
/* The live session whose id is `id`; NULL when none. */
const struct dlq_session *dlq_sessions_find(struct dlq_sessions *,
	    const char *id, int64_t now);
void	dlq_sessions_close(struct dlq_sessions *, const char *id);
/* Sessions open at `now`. */
int	dlq_sessions_live(struct dlq_sessions *, int64_t now);

/* Whether `addr` may try a login now; when not, *retry_s says when. */
bool	dlq_login_allowed(struct dlq_sessions *, const char *addr,
	    int64_t now, int64_t *retry_s);
/* A failed login from `addr`. */
void	dlq_login_failed(struct dlq_sessions *, const char *addr, int64_t now);

#endif
