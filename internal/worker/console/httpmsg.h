/* httpmsg.h - a console request and its response, as http.c hands
 * them over and takes them back: the parts the console looks at, none of
 * libmicrohttpd's types. */
#ifndef DLQ_CONSOLE_HTTPMSG_H
#define DLQ_CONSOLE_HTTPMSG_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "proto.h"

#define DLQ_CONSOLE_ARGS_MAX	32		/* query parameters */
/* request body bytes: a control request's limit */
#define DLQ_CONSOLE_BODY_MAX	DLQ_CONTROL_REQUEST_MAX
#define DLQ_CONSOLE_HEADERS_MAX	8

struct dlq_kv {
	const char	*k, *v;
};

struct dlq_console_req {
	const char		*method, *url;
	const char		*authorization;	/* header; NULL: none */
	const char		*session;	/* cookie; NULL: none */
	const char		*csrf;		/* X-CSRF-Token */
	const char		*proxy_user;	/* console.proxy_user_header */
	const char		*if_none_match;
	const char		*content_type;
	const char		*origin, *host;	/* headers; NULL: none */
	const char		*peer;		/* client address, text */
	const struct dlq_kv	*args;
	size_t			 nargs;
	bool			 too_many_args;
	const char		*body;
	size_t			 body_len;
	bool			 body_too_large;
};

struct dlq_console_res {
	unsigned	 status;
	const char	*type;
	struct dlq_buf	*body;		/* the caller's, empty */
	const void	*fixed;		/* instead of body: static bytes */
	size_t		 fixed_len;
	size_t		 nheaders;
	struct {
		char	 name[32];
		char	 value[192];
	}		 headers[DLQ_CONSOLE_HEADERS_MAX];
};

/* Answers `status` with the control protocol's error shape,
 * {"ok":false,"code":CODE,"error":MSG} (the body emptied first). */
void	dlq_console_error(struct dlq_console_res *, unsigned status,
	    const char *code, const char *msg);
/* Adds a response header (dropped past DLQ_CONSOLE_HEADERS_MAX). */
void	dlq_console_header(struct dlq_console_res *, const char *name,
	    const char *value);

#endif
