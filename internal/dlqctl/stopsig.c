/* stopsig.c - a stop asked by signal, for the dlqctl commands. */
#include "stopsig.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>

/* atomic: replay's lane thread reads it too (lock-free, so a handler
 * may set it) */
static atomic_int asked;

static void
on_stop(int sig)
{
	(void)sig;
	asked = 1;
}

void
dlq_stop_catch(bool second_kills)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sa.sa_flags = second_kills ? SA_RESETHAND : 0;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

bool
dlq_stop_asked(void)
{
	return asked != 0;
}
