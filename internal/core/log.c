/* log.c - JSON lines on stdout, one write(2) per line (OpenBSD log.c), or
 * for a batch one write to a regular file and one per PIPE_BUF of whole
 * lines to a pipe or socket. */
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Atomic int min_level = DLQ_LOG_INFO;
static _Atomic int log_fd = 1;
static _Atomic int log_fd_regular = -1;	/* unknown until the first batch */

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void
dlq_log_set_level(enum dlq_log_level l)
{
	min_level = l;
}

void
dlq_log_set_fd(int fd)
{
	log_fd = fd;
	log_fd_regular = -1;
}

bool
dlq_log_enabled(enum dlq_log_level l)
{
	return (int)l >= min_level;
}

int
dlq_log_level_parse(const char *s, enum dlq_log_level *out)
{
	size_t i;

	/* LOG_LEVEL=DEBUG is as usual as debug */
	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcasecmp(s, level_names[i]) == 0) {
			*out = (enum dlq_log_level)i;
			return 0;
		}
	if (strcasecmp(s, "warning") == 0 || strcasecmp(s, "err") == 0) {
		*out = tolower((unsigned char)s[0]) == 'w' ? DLQ_LOG_WARN :
		    DLQ_LOG_ERR;
		return 0;
	}
	return -1;
}

bool
dlq_log_begin(struct dlq_buf *b, enum dlq_log_level l, const char *event)
{
	struct timespec ts;

	if (!dlq_log_enabled(l))
		return false;
	clock_gettime(CLOCK_REALTIME, &ts);
	dlq_buf_adds(b, "{\"ts\":\"");
	dlq_buf_rfc3339_ms(b, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	dlq_buf_adds(b, "\",\"level\":\"");
	dlq_buf_adds(b, level_names[l]);
	dlq_buf_adds(b, "\",\"event\":");
	dlq_buf_json_cstr(b, event);
	return true;
}

void
dlq_log_key(struct dlq_buf *b, const char *key)
{
	dlq_buf_json_key(b, key);
}

void
dlq_log_str(struct dlq_buf *b, const char *key, const char *v)
{
	dlq_log_key(b, key);
	dlq_buf_json_cstr(b, v);
}

void
dlq_log_strn(struct dlq_buf *b, const char *key, const void *v, size_t n)
{
	dlq_log_key(b, key);
	dlq_buf_json_str(b, v, n);
}

void
dlq_log_int(struct dlq_buf *b, const char *key, int64_t v)
{
	dlq_log_key(b, key);
	dlq_buf_add_i64(b, v);
}

void
dlq_log_bool(struct dlq_buf *b, const char *key, bool v)
{
	dlq_log_key(b, key);
	dlq_buf_adds(b, v ? "true" : "false");
}

static void
write_all(const char *p, size_t len)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = write(log_fd, p + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
}

void
dlq_log_end(struct dlq_buf *b)
{
	static const char dropped[] =
	    "{\"level\":\"error\",\"event\":\"log_line_dropped\"}\n";
	int saved = errno;

	dlq_buf_adds(b, "}\n");
	if (b->oom)
		write_all(dropped, sizeof(dropped) - 1);
	else
		write_all(b->data, b->len);
	dlq_buf_reset(b);
	errno = saved;
}

/* A write(2) to a regular file holds the file's lock to its end: lines of
 * other threads never land inside it, whatever its length. */
static bool
fd_is_regular(void)
{
	struct stat st;
	int regular = log_fd_regular;

	if (regular == -1) {
		regular = fstat(log_fd, &st) == 0 && S_ISREG(st.st_mode);
		log_fd_regular = regular;
	}
	return regular == 1;
}

void
dlq_log_write_lines(const char *p, size_t len)
{
	const char *end = p + len, *chunk = p, *nl;
	int saved = errno;

	if (fd_is_regular()) {
		/* whole lines only: an unfinished one stays out */
		if ((nl = memrchr(p, '\n', len)) != NULL)
			write_all(p, (size_t)(nl + 1 - p));
		errno = saved;
		return;
	}
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		/* the chunk would pass PIPE_BUF with this line: write it first */
		if (p > chunk && (size_t)(nl + 1 - chunk) > PIPE_BUF) {
			write_all(chunk, (size_t)(p - chunk));
			chunk = p;
		}
		p = nl + 1;
	}
	if (p > chunk)
		write_all(chunk, (size_t)(p - chunk));
	errno = saved;
}

void
dlq_log(enum dlq_log_level l, const char *event, ...)
{
	struct dlq_buf b;
	const char *k, *v;
	va_list ap;

	dlq_buf_init(&b);
	if (!dlq_log_begin(&b, l, event))
		return;
	va_start(ap, event);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		dlq_log_str(&b, k, v);
	}
	va_end(ap);
	dlq_log_end(&b);
	dlq_buf_release(&b);
}
