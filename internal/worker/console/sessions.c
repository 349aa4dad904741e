/* sessions.c - browser sessions and the login limiter (sessions.h). */
#include "sessions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "token.h"

#define ADDRS_MAX	256

struct fails {
	char	 addr[64];
	int64_t	 since_ms;	/* the window's start; 0: slot free */
	int	 n;
};

struct dlq_sessions {
	int64_t			 ttl_ms;
	struct dlq_session	 s[DLQ_SESSIONS_MAX];
	struct fails		 f[ADDRS_MAX];
};

struct dlq_sessions *
dlq_sessions_new(int64_t ttl_ms)
{
	struct dlq_sessions *ss = calloc(1, sizeof(*ss));

	if (ss != NULL)
		ss->ttl_ms = ttl_ms;
	return ss;
}

void
dlq_sessions_free(struct dlq_sessions *ss)
{
	if (ss != NULL)
		memset(ss->s, 0, sizeof(ss->s));	/* no ids left behind */
	free(ss);
}

const struct dlq_session *
dlq_sessions_open(struct dlq_sessions *ss, const struct dlq_console_user *u,
    int64_t now)
{
	struct dlq_session *s = &ss->s[0], *e;

	/* a free or expired slot, else the one that ends first */
	for (e = ss->s; e < ss->s + DLQ_SESSIONS_MAX; e++) {
		if (e->expires_ms <= now) {
			s = e;
			break;
		}
		if (e->expires_ms < s->expires_ms)
			s = e;
	}
	if (!dlq_random_hex(s->id, DLQ_SESSION_ID_LEN / 2) ||
	    !dlq_random_hex(s->csrf, DLQ_CSRF_LEN / 2)) {
		memset(s, 0, sizeof(*s));
		return NULL;
	}
	s->user = *u;
	s->expires_ms = now + ss->ttl_ms;
	return s;
}

const struct dlq_session *
dlq_sessions_find(struct dlq_sessions *ss, const char *id, int64_t now)
{
	const struct dlq_session *found = NULL, *e;

	if (strlen(id) != DLQ_SESSION_ID_LEN)
		return NULL;
	for (e = ss->s; e < ss->s + DLQ_SESSIONS_MAX; e++)
		if (e->expires_ms > now && dlq_token_equal(e->id, id,
		    DLQ_SESSION_ID_LEN))
			found = e;
	return found;
}

void
dlq_sessions_close(struct dlq_sessions *ss, const char *id)
{
	struct dlq_session *e;

	if (strlen(id) != DLQ_SESSION_ID_LEN)
		return;
	for (e = ss->s; e < ss->s + DLQ_SESSIONS_MAX; e++)
		if (e->expires_ms != 0 && dlq_token_equal(e->id, id,
		    DLQ_SESSION_ID_LEN))
			memset(e, 0, sizeof(*e));
}

int
dlq_sessions_live(struct dlq_sessions *ss, int64_t now)
{
	int n = 0;
	size_t i;

	for (i = 0; i < DLQ_SESSIONS_MAX; i++)
		n += ss->s[i].expires_ms > now;
	return n;
}

/* The window of `addr`: its own, or a new one in a free slot or the
 * oldest's. */
static struct fails *
window(struct dlq_sessions *ss, const char *addr, int64_t now, bool make)
{
	struct fails *w = &ss->f[0], *e;

	for (e = ss->f; e < ss->f + ADDRS_MAX; e++) {
		if (e->since_ms != 0 && strcmp(e->addr, addr) == 0) {
			if (now - e->since_ms >= DLQ_LOGIN_WINDOW_MS)
				memset(e, 0, sizeof(*e));
			else
				return e;
			w = e;
			break;
		}
		if (e->since_ms < w->since_ms)
			w = e;
	}
	if (!make)
		return NULL;
	memset(w, 0, sizeof(*w));
	snprintf(w->addr, sizeof(w->addr), "%s", addr);
	w->since_ms = now;
	return w;
}

bool
dlq_login_allowed(struct dlq_sessions *ss, const char *addr, int64_t now,
    int64_t *retry_s)
{
	struct fails *w = window(ss, addr, now, false);

	*retry_s = 0;
	if (w == NULL || w->n < DLQ_LOGIN_FAILS)
		return true;
	*retry_s = (w->since_ms + DLQ_LOGIN_WINDOW_MS - now + 999) / 1000;
	return false;
}

void
dlq_login_failed(struct dlq_sessions *ss, const char *addr, int64_t now)
{
	struct fails *w = window(ss, addr, now, true);

	w->n++;
}
