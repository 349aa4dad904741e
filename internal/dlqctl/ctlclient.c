/* ctlclient.c - connect, send a line, read a line. */
#include "ctlclient.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "amqp.h"
#include "jsonexact.h"
#include "termtext.h"
#include "proto.h"

#define RESPONSE_MAX	(256 * 1024 * 1024)

static int64_t timeout_ms = DLQ_CTL_TIMEOUT_MS;

void
dlq_ctl_set_timeout(int64_t ms)
{
	timeout_ms = ms;
}

/* Waits until `fd` can be read or the call's time is up (0: it is). */
static int
wait_answer(int fd, int64_t deadline)
{
	struct pollfd p = { fd, POLLIN, 0 };
	int64_t left;
	int rc;

	do {
		left = deadline - dlq_now_ms();
		if (timeout_ms > 0 && left <= 0)
			return 0;
		rc = poll(&p, 1, timeout_ms == 0 ? -1 :
		    left > 60000 ? 60000 : (int)left);
	} while (rc == 0 || (rc < 0 && errno == EINTR));
	return rc;
}

/* Why the worker's socket at `path` did not take the connection: its
 * path naming something else, a socket nobody answers on any more (a
 * worker killed), a directory or socket mode that keeps this user out,
 * no such path, or the system's reason. */
static void
unreachable(const char *path, int err, char *why, size_t whylen)
{
	struct stat st;
	char sys[128];

	if (err == ECONNREFUSED && stat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
		snprintf(why, whylen, "cannot reach dlq-worker at %s: it is a "
		    "%s, not a socket (control.socket / DLQ_CONTROL_SOCKET "
		    "names the worker's socket)", path, S_ISDIR(st.st_mode) ?
		    "directory" : "file");
	else if (err == ECONNREFUSED)
		snprintf(why, whylen, "cannot reach dlq-worker at %s: nobody "
		    "answers on this socket (left by a worker that stopped? is "
		    "it running?)", path);
	else if (err == EACCES)
		snprintf(why, whylen, "cannot reach dlq-worker at %s: "
		    "Permission denied (this user may not enter a directory of "
		    "the path, or write the socket: ls -ld each)", path);
	else
		snprintf(why, whylen, "cannot reach dlq-worker at %s: %s (is "
		    "it running? control.socket / DLQ_CONTROL_SOCKET)", path,
		    strerror_r(err, sys, sizeof(sys)));
}

/* How the worker begins a progress line (control.c) */
#define PROGRESS_LINE	"{\"progress\":"

/* Hands the progress lines at the start of `in` to `progress` and
 * takes them out; true when the answer's line has come. Only a line
 * that begins as a progress line is parsed here: an answer of megabytes
 * is parsed once, by the caller. */
static bool
take_lines(struct dlq_buf *in, void (*progress)(const cJSON *, void *),
    void *arg, int64_t *deadline, bool *told)
{
	cJSON *line;
	char *nl;
	size_t used;

	while ((nl = memchr(in->data ? in->data : "", '\n', in->len)) != NULL) {
		used = (size_t)(nl - in->data) + 1;
		if (used < sizeof(PROGRESS_LINE) || memcmp(in->data,
		    PROGRESS_LINE, sizeof(PROGRESS_LINE) - 1) != 0)
			return true;
		line = cJSON_ParseWithLength(in->data, used - 1);
		if (progress != NULL && line != NULL) {
			progress(cJSON_GetObjectItemCaseSensitive(line,
			    "progress"), arg);
			*told = true;
		}
		cJSON_Delete(line);
		*deadline = dlq_now_ms() + timeout_ms;
		memmove(in->data, in->data + used, in->len - used);
		in->len -= used;
	}
	return false;
}

cJSON *
dlq_ctl_call(const char *path, const cJSON *request, char *why, size_t whylen)
{
	return dlq_ctl_call_progress(path, request, NULL, NULL, why, whylen);
}

cJSON *
dlq_ctl_call_progress(const char *path, const cJSON *request,
    void (*progress)(const cJSON *, void *), void *arg, char *why,
    size_t whylen)
{
	struct sockaddr_un sa;
	struct dlq_buf in;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	int64_t deadline = dlq_now_ms() + timeout_ms;
	char buf[65536], *text, wait[16];
	cJSON *answer = NULL;
	ssize_t n = 0;
	size_t len, off = 0;
	bool told = false;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, whylen, "socket path too long: %s", path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	/* connecting to a worker whose backlog is full, and sending to one
	 * that does not read, wait no longer than the answer would */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		unreachable(path, errno, why, whylen);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	text = cJSON_PrintUnformatted(request);
	len = strlen(text);
	text[len] = '\n';	/* replaces the NUL; the length is known */
	while (off < len + 1) {
		if ((n = send(fd, text + off, len + 1 - off, MSG_NOSIGNAL)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		off += (size_t)n;
	}
	free(text);
	dlq_buf_init(&in);
	/* read even when the request did not all go: a worker that refuses
	 * a connection (too many) answers and closes without reading it */
	while (wait_answer(fd, deadline) > 0 &&
	    (n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		dlq_buf_add(&in, buf, (size_t)n);
		if ((memchr(buf, '\n', (size_t)n) != NULL &&
		    take_lines(&in, progress, arg, &deadline, &told)) ||
		    in.len > RESPONSE_MAX)
			break;
	}
	close(fd);
	if (told)
		progress(NULL, arg);	/* the end of them */
	if (timeout_ms > 0 && dlq_now_ms() >= deadline &&
	    memchr(in.data ? in.data : "", '\n', in.len) == NULL)
		snprintf(why, whylen, "no answer from dlq-worker at %s within "
		    "%s: busy with a long request (a purge?) or stuck; "
		    "dlqctl --timeout DUR waits longer", path,
		    dlq_format_duration(timeout_ms, wait, sizeof(wait)));
	else if (in.len == 0 ||
	    (answer = cJSON_ParseWithLength(in.data, in.len)) == NULL)
		snprintf(why, whylen, "no valid answer from dlq-worker at %s",
		    path);
	else	/* a 64-bit id in a header is printed as it came */
		dlq_json_keep_integers(answer, in.data, in.len);
	dlq_buf_release(&in);
	return answer;
}

cJSON *
dlq_ctl_request(const char *cmd)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, "cmd", cmd);
	return r;
}

int
dlq_ctl_exit_code(const cJSON *ans)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(ans, "code");

	return dlq_result_exit(dlq_result_parse(cJSON_GetStringValue(code)));
}

static void
put_object(cJSON *o)
{
	char *text = cJSON_PrintUnformatted(o);

	puts(text != NULL ? text : "null");
	cJSON_free(text);
	cJSON_Delete(o);
}

void
dlq_ctl_needs_yes_json(const char *cmd, double n)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddFalseToObject(o, "ok");
	cJSON_AddStringToObject(o, "code", "needs_yes");
	cJSON_AddStringToObject(o, "command", cmd);
	cJSON_AddNumberToObject(o, "would_change", n);
	put_object(o);
}

void
dlq_ctl_error_json(const char *code, const char *why)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddFalseToObject(o, "ok");
	cJSON_AddStringToObject(o, "code", code);
	cJSON_AddStringToObject(o, "error", why);
	put_object(o);
}

int
dlq_ctl_refusal(const cJSON *ans, bool json)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(ans, "error");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(ans, "code");

	if (json)
		dlq_ctl_error_json(cJSON_IsString(code) ? code->valuestring :
		    "error", cJSON_IsString(err) ? err->valuestring : "failed");
	/* the worker's words may quote what a message or a user gave */
	fputs("dlqctl: ", stderr);
	dlq_term_put(stderr, cJSON_IsString(err) ? err->valuestring : "failed",
	    -1, 0);
	fputc('\n', stderr);
	return dlq_ctl_exit_code(ans);
}

