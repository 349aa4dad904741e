/* control.c - the control socket: the listening socket, its clients
 * and their slots (requests.c answers them, roles.c says who they are).
 *
 * One thread polls the listening socket and up to MAX_CLIENTS clients,
 * USER_CLIENTS of one user, the last ADMIN_CLIENTS kept for root and the
 * worker's own user; a client that sends nothing for
 * control.idle_timeout_ms after connecting or an answer (dlqctl sends
 * its request at once), or whose request is not whole within
 * REQUEST_DEADLINE_MS of its first byte, is closed. A caller without the
 * role a command needs is answered before anything is locked and leaves
 * at most a small audit row (refused).
 * Requests are parsed with cJSON and bounded in size; replies go out with
 * a send timeout so a client that does not read cannot stall the thread. */
#include "control.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "amqp.h"
#include "archive.h"
#include "log.h"
#include "parentdir.h"
#include "requests.h"
#include "roles.h"

#define MAX_CLIENTS	32
/* One user's connections at most: a script that leaks them (or sessions
 * left open) cannot lock the others out. */
#define USER_CLIENTS	(MAX_CLIENTS / 4)
/* Kept for root and the worker's own user: however many others hold,
 * an admin can still connect. */
#define ADMIN_CLIENTS	4
/* A request must be whole this long after its first byte: one sent a
 * byte at a time would otherwise hold its slot for ever (the idle timer
 * counts only the time between an answer and the next request). */
#define REQUEST_DEADLINE_MS	5000
#define POLL_MS		250
/* The answer buffer is reused; one larger than this (a replay chunk's
 * payloads: a 60 MiB dead letter made 128 MiB) is freed once sent. */
#define OUT_KEEP_BYTES	(1024 * 1024)
/* A request that took this long read much of a large archive: what
 * SQLite sorted and gathered for it went back to malloc's free lists,
 * whose pages stay resident until given back (malloc_trim): 3.5 MiB
 * after a `groups` of 610 000 records and 110 000 signatures. */
#define TRIM_AFTER_MS	50

struct client {
	int		 fd;
	uid_t		 uid;
	enum dlq_role	 role;
	char		 user[64];
	struct dlq_buf	 in;
	int64_t		 idle_since_ms;	/* connected, or answered */
	int64_t		 request_since_ms; /* its first byte; in.len > 0 */
};

struct dlq_control {
	const struct dlq_config	*cfg;
	struct dlq_archive	*archive;
	int			 fd;
	pthread_t		 thread;
	atomic_bool		 stop;
	struct client		 c[MAX_CLIENTS];
	size_t			 n;
	struct dlq_buf		 out;
	dev_t			 sock_dev;	/* the socket file it made */
	ino_t			 sock_ino;
};



static void
drop_client(struct dlq_control *k, size_t i)
{
	close(k->c[i].fd);
	dlq_buf_release(&k->c[i].in);
	k->c[i] = k->c[--k->n];
}


/* Says `error` (short, plain ASCII) to a client about to be closed. */
static void
say_closing(int fd, const char *error)
{
	char line[256];
	int n;

	n = snprintf(line, sizeof(line), "{\"ok\":false,\"code\":\"error\","
	    "\"error\":\"%.200s\"}\n", error);
	if (n > 0 && (size_t)n < sizeof(line))
		dlq_requests_send(fd, line, (size_t)n);
}

static size_t
clients_of(const struct dlq_control *k, uid_t uid)
{
	size_t i, n = 0;

	for (i = 0; i < k->n; i++)
		n += k->c[i].uid == uid;
	return n;
}

static void
accept_client(struct dlq_control *k)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct timeval tv = { 2, 0 };
	struct client *c;
	char why[128];
	int fd;

	if ((fd = accept4(k->fd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (k->n >= MAX_CLIENTS ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    (k->n >= MAX_CLIENTS - ADMIN_CLIENTS && cred.uid != 0 &&
	    cred.uid != geteuid())) {
		say_closing(fd, "too many control connections");
		close(fd);
		return;
	}
	if (clients_of(k, cred.uid) >= USER_CLIENTS) {
		snprintf(why, sizeof(why), "too many control connections of "
		    "this user (%d at most)", USER_CLIENTS);
		say_closing(fd, why);
		close(fd);
		return;
	}
	c = &k->c[k->n++];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->uid = cred.uid;
	c->role = dlq_roles_of(k->cfg, cred.uid, cred.gid, c->user,
	    sizeof(c->user));
	dlq_buf_init(&c->in);
	c->idle_since_ms = dlq_now_ms();
}

/* A request line longer than DLQ_CONTROL_REQUEST_MAX, whole or not: said,
 * then the client is dropped (false). */
static bool
refuse_large(int fd)
{
	static const char big[] = "{\"ok\":false,\"code\":\"usage\","
	    "\"error\":\"request too large\"}\n";

	dlq_requests_send(fd, big, sizeof(big) - 1);
	return false;
}

/* Reads what is there; handles complete lines. False: drop the client. */
static bool
serve_client(struct dlq_control *k, struct client *c)
{
	char buf[16384], *nl;
	ssize_t n;
	size_t used;
	int64_t t0;
	bool sent;

	if ((n = read(c->fd, buf, sizeof(buf))) <= 0)
		return n < 0 && errno == EINTR;
	if (c->in.len == 0)
		c->request_since_ms = dlq_now_ms();
	dlq_buf_add(&c->in, buf, (size_t)n);
	while (c->in.len > 0 && (nl = memchr(c->in.data, '\n', c->in.len))) {
		used = (size_t)(nl - c->in.data) + 1;
		if (used - 1 > DLQ_CONTROL_REQUEST_MAX)
			return refuse_large(c->fd);
		dlq_buf_reset(&k->out);
		t0 = dlq_now_ms();
		dlq_requests_handle(k->cfg,
		    k->archive,
		    c->in.data, used - 1, c->role, c->user, (long)c->uid, c->fd,
		    &k->out);
		memmove(c->in.data, c->in.data + used, c->in.len - used);
		c->in.len -= used;
		sent = dlq_requests_send(c->fd, k->out.data, k->out.len);
		/* now its turn to ask; what it sent after this request
		 * began the next one */
		c->idle_since_ms = c->request_since_ms = dlq_now_ms();
		if (k->out.cap > OUT_KEEP_BYTES) {
			dlq_buf_release(&k->out);
			dlq_buf_init(&k->out);
		}
		if (dlq_now_ms() - t0 >= TRIM_AFTER_MS)
			malloc_trim(0);
		if (!sent)
			return false;
	}
	if (c->in.len > DLQ_CONTROL_REQUEST_MAX || c->in.oom)
		return refuse_large(c->fd);
	return true;
}

static void *
run(void *arg)
{
	struct dlq_control *k = arg;
	struct pollfd p[MAX_CLIENTS + 1];
	char idle[128], slow[128];
	const char *why;
	int64_t now;
	size_t i, n;

	snprintf(idle, sizeof(idle), "nothing sent for %lld ms "
	    "(control.idle_timeout_ms): connection closed",
	    (long long)k->cfg->control_idle_ms);
	snprintf(slow, sizeof(slow), "request not complete %d ms after its "
	    "first byte: connection closed", REQUEST_DEADLINE_MS);
	while (!k->stop) {
		p[0].fd = k->fd;
		p[0].events = POLLIN;
		for (i = 0; i < k->n; i++) {
			p[i + 1].fd = k->c[i].fd;
			p[i + 1].events = POLLIN;
			p[i + 1].revents = 0;
		}
		n = k->n;
		if (poll(p, n + 1, POLL_MS) < 0)
			continue;
		/* clients first, from the end: dropping moves the last one.
		 * One that sent nothing for too long is closed (what came
		 * while another's request was handled is read first). */
		for (i = n; i-- > 0;) {
			if (p[i + 1].revents && !serve_client(k, &k->c[i])) {
				drop_client(k, i);
				continue;
			}
			now = dlq_now_ms();
			why = NULL;
			if (k->c[i].in.len > 0 && now -
			    k->c[i].request_since_ms >= REQUEST_DEADLINE_MS)
				why = slow;
			else if (k->c[i].in.len == 0 && now -
			    k->c[i].idle_since_ms >= k->cfg->control_idle_ms)
				why = idle;
			if (why != NULL) {
				say_closing(k->c[i].fd, why);
				drop_client(k, i);
			}
		}
		if (p[0].revents & POLLIN)
			accept_client(k);
	}
	while (k->n > 0)
		drop_client(k, k->n - 1);
	return NULL;
}

/* Makes way for the socket at `sa`: nothing there, or a socket no one
 * listens on (left by a worker that was killed), which is removed. A
 * live socket means another worker: never stolen. Anything else (a
 * file, a directory, a link: control.socket given the archive's path by
 * a slip) is refused and left as it is. */
static int
clear_socket_path(const struct sockaddr_un *sa, char *why, size_t size)
{
	struct stat st;
	int probe, live;

	if (lstat(sa->sun_path, &st) == -1)
		return 0;	/* nothing there; or bind says why not */
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, size, "the path exists and is not a socket "
		    "(left as it is: is control.socket right?)");
		return -1;
	}
	if ((probe = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0) {
		live = connect(probe, (const struct sockaddr *)sa,
		    sizeof(*sa)) == 0;
		close(probe);
		if (live) {
			snprintf(why, size, "%s: another process answers on "
			    "it (a second dlq-worker with the same "
			    "control.socket?)", strerror(EADDRINUSE));
			return -1;
		}
	}
	unlink(sa->sun_path);
	return 0;
}

/* The directory of the socket must be one others cannot write to (nor
 * anyone but us or root own): in a world-writable one, anyone could put
 * a link or a socket of their own where dlqctl looks. */
static int
check_socket_dir(const char *path, char *why, size_t size)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 :
		    (int)(slash - path), path);
	if (stat(dir, &st) != 0) {
		snprintf(why, size, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if ((st.st_mode & S_IWOTH) || (st.st_uid != 0 &&
	    st.st_uid != geteuid())) {
		snprintf(why, size, "its directory %s is %s: put the socket in "
		    "a directory only the worker's user can write (the "
		    "default /run/dlq-monitor/ is made so)", dir,
		    (st.st_mode & S_IWOTH) ? "writable by every user" :
		    "owned by another user");
		return -1;
	}
	return 0;
}

/* Binds the control socket at `path`, world-connectable (the roles are
 * the access control). It is made and given its mode in a directory of
 * its own that only this user can enter, then moved into place: a chmod
 * at the path would follow a link put there in between. Fails, saying
 * why, when another worker holds it, something else is at the path, its
 * directory is writable by others, or could not be made (a user who may
 * not write /run). */
static int
bind_socket(struct dlq_control *k, const char *path, char *why, size_t size)
{
	struct sockaddr_un sa, tmp;
	char dir[sizeof(sa.sun_path) - 2];	/* and "/s" */
	const char *slash = strrchr(path, '/');
	struct stat st;
	int dir_err, n;
	bool moved;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	tmp = sa;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, size, "%s", strerror(ENAMETOOLONG));
		return -1;
	}
	strcpy(sa.sun_path, path);
	/* others reach the socket through it: 0755. A directory that
	 * cannot be made is why the bind below fails. */
	dir_err = dlq_parentdir_make(path, 0755, why, size);
	if (dir_err != 0 || check_socket_dir(path, why, size) == -1 ||
	    clear_socket_path(&sa, why, size) == -1)
		return -1;
	/* a path too long for the private directory's name beside it is
	 * bound in place: its directory is not writable by others either */
	n = snprintf(dir, sizeof(dir), "%.*s.dlqXXXXXX", slash ? (int)(slash -
	    path + 1) : 0, path);
	moved = n > 0 && (size_t)n < sizeof(dir) && mkdtemp(dir) != NULL;
	snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s", moved ? dir : path);
	if (moved)
		strcat(tmp.sun_path, "/s");
	if ((k->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, 0)) >= 0 && bind(k->fd, (struct sockaddr *)&tmp,
	    sizeof(tmp)) == 0 && chmod(tmp.sun_path, 0666) == 0 &&
	    (!moved || rename(tmp.sun_path, path) == 0) &&
	    lstat(path, &st) == 0 && listen(k->fd, 64) == 0) {
		if (moved)
			rmdir(dir);
		k->sock_dev = st.st_dev;
		k->sock_ino = st.st_ino;
		return 0;
	}
	snprintf(why, size, "%s", strerror(errno));
	if (moved) {
		unlink(tmp.sun_path);
		rmdir(dir);
	}
	return -1;
}

/* At stop: the socket file goes, if it is still the one it made (not
 * one a worker started since put there after this one's was removed). */
static void
remove_socket(const struct dlq_control *k)
{
	struct stat st;

	if (lstat(k->cfg->control_socket, &st) == 0 &&
	    st.st_dev == k->sock_dev && st.st_ino == k->sock_ino)
		unlink(k->cfg->control_socket);
}

static void
log_unknown_member(const char *key, const char *what, const char *name,
    void *arg)
{
	(void)arg;
	dlq_log(DLQ_LOG_WARN, "control_member_unknown", "setting", key, what,
	    name, NULL);
}

struct dlq_control *
dlq_control_start(const struct dlq_config *c)
{
	struct dlq_control *k;
	char why[256];

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	k->cfg = c;
	k->fd = -1;
	dlq_buf_init(&k->out);
	if (bind_socket(k, c->control_socket, why, sizeof(why)) == -1) {
		dlq_log(DLQ_LOG_ERR, "control_failed", "socket", c->control_socket,
		    "error", why, NULL);
		goto fail;
	}
	if ((k->archive = dlq_archive_open(c)) == NULL)
		goto fail;
	if (pthread_create(&k->thread, NULL, run, k) != 0)
		goto fail;
	dlq_log(DLQ_LOG_INFO, "control_listening", "socket", c->control_socket,
	    NULL);
	dlq_roles_unknown_members(c, log_unknown_member, NULL);
	return k;
fail:
	if (k->fd >= 0)
		close(k->fd);
	dlq_archive_close(k->archive);
	dlq_buf_release(&k->out);
	free(k);
	return NULL;
}

void
dlq_control_stop(struct dlq_control *k)
{
	if (k == NULL)
		return;
	k->stop = true;
	pthread_join(k->thread, NULL);
	close(k->fd);
	remove_socket(k);
	dlq_archive_close(k->archive);
	dlq_buf_release(&k->out);
	free(k);
}
