/* replayopts.h - what an operator asked of dlqctl replay. */
#ifndef DLQ_REPLAYOPTS_H
#define DLQ_REPLAYOPTS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

struct dlq_replay_opts {
	cJSON		*select;	/* ids | queue, class, signature,
					   since_ms; limit (borrowed) */
	const char	*reason;
	const char	*evidence;
	const char	*to_exchange;
	const char	*routing_key;
	const char	*from_queue;
	int64_t		 limit;
	int64_t		 rate;		/* messages per second; 0: no limit */
	int64_t		 canary;	/* publish this many first; 0: off */
	int64_t		 watch_ms;	/* then watch them this long */
	bool		 execute;
	bool		 force;
	bool		 reset_retries;
	bool		 json;
};

#endif
