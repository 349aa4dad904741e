/* users.c - the console's users (users.h). */
#include "users.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "token.h"

#define USERS_MAX	1000
#define LINE_MAX_BYTES	512

struct entry {
	struct dlq_console_user	 user;
	char			 hash[DLQ_TOKEN_HASH_LEN + 1];	/* "" : none */
};

struct dlq_users {
	char		*path;
	pthread_mutex_t	 mu;
	struct entry	*v;
	size_t		 n;
	struct timespec	 mtime;
	off_t		 size;
};

/* One line into `e`: 1 when a user, 0 when blank or a comment, -1 with
 * `why` when wrong. */
static int
parse_line(char *line, struct entry *e, char *why, size_t n)
{
	char *name, *role, *hash, *more, *save = NULL;

	line[strcspn(line, "\r\n")] = '\0';
	name = strtok_r(line, " \t", &save);
	if (name == NULL || name[0] == '#')
		return 0;
	role = strtok_r(NULL, " \t", &save);
	hash = strtok_r(NULL, " \t", &save);
	more = strtok_r(NULL, " \t", &save);
	if (role == NULL || hash == NULL || more != NULL) {
		snprintf(why, n, "expected NAME ROLE SHA256 (three words)");
		return -1;
	}
	if (!dlq_user_name_valid(name)) {
		snprintf(why, n, "a name is 1 to %d letters, digits, . _ @ "
		    "or -",
		    DLQ_USER_NAME_MAX);
		return -1;
	}
	if ((e->user.role = dlq_role_parse(role)) == DLQ_ROLE_NONE) {
		snprintf(why, n, "unknown role '%.20s' (viewer, operator, "
		    "admin)",
		    role);
		return -1;
	}
	if (strcmp(hash, "-") == 0)
		e->hash[0] = '\0';
	else if (dlq_token_hash_valid(hash))
		memcpy(e->hash, hash, sizeof(e->hash));
	else {
		snprintf(why, n, "the third word is the token's SHA-256 in "
		    "lowercase hex (dlqctl console token prints it), or -");
		return -1;
	}
	snprintf(e->user.name, sizeof(e->user.name), "%s", name);
	return 1;
}

static int
read_file(const char *path, struct entry **out, size_t *count, char *why,
    size_t n)
{
	char line[LINE_MAX_BYTES], what[160];
	struct entry *v, e;
	size_t k = 0, i;
	int lineno = 0, rc;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL) {
		snprintf(why, n, "%s: %s", path, strerror(errno));
		return -1;
	}
	if ((v = calloc(USERS_MAX, sizeof(*v))) == NULL) {
		fclose(f);
		snprintf(why, n, "out of memory");
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			snprintf(why, n, "%s:%d: line too long", path, lineno);
			goto fail;
		}
		if ((rc = parse_line(line, &e, what, sizeof(what))) == 0)
			continue;
		if (rc == -1) {
			snprintf(why, n, "%s:%d: %s", path, lineno, what);
			goto fail;
		}
		for (i = 0; i < k; i++)
			if (strcmp(v[i].user.name, e.user.name) == 0) {
				snprintf(why, n, "%s:%d: %s is there twice",
				    path, lineno, e.user.name);
				goto fail;
			}
		if (k == USERS_MAX) {
			snprintf(why, n, "%s: more than %d users", path,
			    USERS_MAX);
			goto fail;
		}
		v[k++] = e;
	}
	fclose(f);
	*out = v;
	*count = k;
	return 0;
fail:
	fclose(f);
	free(v);
	return -1;
}

static void
stamp(struct dlq_users *u)
{
	struct stat st;

	if (stat(u->path, &st) == 0) {
		u->mtime = st.st_mtim;
		u->size = st.st_size;
	}
}

struct dlq_users *
dlq_users_load(const char *path, char *why, size_t n)
{
	struct dlq_users *u;

	if ((u = calloc(1, sizeof(*u))) == NULL ||
	    (u->path = strdup(path)) == NULL) {
		free(u);
		snprintf(why, n, "out of memory");
		return NULL;
	}
	stamp(u);
	if (read_file(path, &u->v, &u->n, why, n) == -1) {
		free(u->path);
		free(u);
		return NULL;
	}
	pthread_mutex_init(&u->mu, NULL);
	return u;
}

void
dlq_users_free(struct dlq_users *u)
{
	if (u == NULL)
		return;
	pthread_mutex_destroy(&u->mu);
	free(u->v);
	free(u->path);
	free(u);
}

void
dlq_users_refresh(struct dlq_users *u)
{
	struct stat st;
	struct entry *v;
	size_t k;
	char why[512];

	if (stat(u->path, &st) == -1 || (st.st_mtim.tv_sec == u->mtime.tv_sec &&
	    st.st_mtim.tv_nsec == u->mtime.tv_nsec && st.st_size == u->size))
		return;
	pthread_mutex_lock(&u->mu);
	u->mtime = st.st_mtim;
	u->size = st.st_size;
	if (read_file(u->path, &v, &k, why, sizeof(why)) == -1) {
		pthread_mutex_unlock(&u->mu);
		dlq_log(DLQ_LOG_ERR, "console_users_failed", "error", why,
		    "kept", "the users it had", NULL);
		return;
	}
	free(u->v);
	u->v = v;
	u->n = k;
	pthread_mutex_unlock(&u->mu);
	dlq_log(DLQ_LOG_INFO, "console_users_loaded", "file", u->path, NULL);
}

size_t
dlq_users_count(const struct dlq_users *u)
{
	return u->n;
}

bool
dlq_users_by_token(struct dlq_users *u, const char *token, size_t n,
    struct dlq_console_user *out)
{
	char hash[DLQ_TOKEN_HASH_LEN + 1];
	bool found = false;
	size_t i;

	dlq_token_hash(token, n, hash);
	pthread_mutex_lock(&u->mu);
	/* every entry compared in constant time: how long it takes does
	 * not tell how much of a guess was right */
	for (i = 0; i < u->n; i++)
		if (u->v[i].hash[0] != '\0' && dlq_token_equal(u->v[i].hash,
		    hash, DLQ_TOKEN_HASH_LEN) && !found) {
			*out = u->v[i].user;
			found = true;
		}
	pthread_mutex_unlock(&u->mu);
	return found;
}

bool
dlq_users_by_name(struct dlq_users *u, const char *name,
    struct dlq_console_user *out)
{
	bool found = false;
	size_t i;

	pthread_mutex_lock(&u->mu);
	for (i = 0; i < u->n && !found; i++)
		if (strcmp(u->v[i].user.name, name) == 0) {
			*out = u->v[i].user;
			found = true;
		}
	pthread_mutex_unlock(&u->mu);
	return found;
}
