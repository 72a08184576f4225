/* dctcp.bpf.c: ecnlab's DCTCP as a BPF tcp_congestion_ops (struct_ops), written from RFC 8257 §3 and
 * Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, §3.
 *
 * Self-contained on purpose: no vmlinux.h and no libbpf headers. The few kernel structures the algorithm reads
 * are declared below with only the fields it uses; `preserve_access_index` makes clang emit CO-RE relocations,
 * so libbpf resolves every field offset against the running kernel's BTF (/sys/kernel/btf/vmlinux) at load
 * time. Only clang is needed to build it, and it compiles in a fraction of a second.
 *
 * The Rust side (src/cc.rs) defines ECNLAB_CA_NAME when it compiles this file; the default below is what a
 * standalone build registers.
 *
 * License: the project's code is MIT OR Apache-2.0. The kernel accepts struct_ops programs only under a
 * GPL-compatible license string, so this object declares "Dual MIT/GPL" (MIT being one of our licenses).
 */

#ifndef ECNLAB_CA_NAME
#define ECNLAB_CA_NAME "ecnlab_dctcp"
#endif

typedef unsigned char __u8;
typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))
#define __ksym __attribute__((section(".ksyms")))

/* ---- The kernel's view, reduced to what DCTCP touches (offsets relocated by libbpf) ---- */

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct netns_ipv4 {
	__u8 sysctl_tcp_slow_start_after_idle; /* net.ipv4.tcp_slow_start_after_idle */
	int sysctl_tcp_reordering;             /* net.ipv4.tcp_reordering: the initial reordering degree */
};

struct net {
	struct netns_ipv4 ipv4;
};

struct sock_common {
	struct {
		struct net *net;
	} skc_net; /* the socket's network namespace */
};

struct sock {
	struct sock_common __sk_common;
	unsigned long sk_pacing_rate;     /* bytes/s: the rate TCP's pacing and TSQ use (written below) */
	unsigned long sk_max_pacing_rate; /* bytes/s: SO_MAX_PACING_RATE, the cap of sk_pacing_rate */
};

struct inet_connection_sock {
	__u8 icsk_ca_state : 5; /* TCP_CA_*: the kernel's congestion state (a bitfield: read with ca_state()) */
	__u32 icsk_rto;         /* jiffies: the retransmission timeout */
	struct {
		__u8 pending; /* ICSK_ACK_* bits of the delayed-ACK machinery */
	} icsk_ack;
	__u64 icsk_ca_priv[13]; /* per-connection congestion-control state (ours: struct dctcp) */
};

struct tcp_sock {
	__u32 snd_cwnd;     /* packets */
	__u32 snd_ssthresh; /* packets */
	__u32 prior_cwnd;   /* cwnd when the current reduction began (set by the kernel before ssthresh()) */
	__u32 snd_una;      /* first unacknowledged sequence number (SND.UNA) */
	__u32 snd_nxt;      /* next sequence number to send (SND.NXT) */
	__u32 rcv_nxt;      /* next sequence number expected (RCV.NXT) */
	__u8 ecn_flags;     /* TCP_ECN_* bits */
	__u32 mss_cache;    /* bytes: the current effective sending MSS */
	__u32 packets_out;  /* segments sent and not yet acknowledged */
	__u32 sacked_out;   /* of those, SACKed */
	__u32 lost_out;     /* of those, deemed lost */
	__u32 retrans_out;  /* retransmitted segments not yet acknowledged */
	__u32 prr_out;      /* segments sent since the current reduction began (RFC 6937's prr_out, kept by the kernel) */
	__u32 srtt_us;      /* smoothed RTT, in microseconds << 3 */
	__u32 high_seq;     /* SND.NXT when the current reduction (or loss recovery) began */
	__u32 undo_marker;  /* nonzero while the current reduction may still be undone */
	__u32 reordering;   /* the connection's measured reordering degree (segments) */
	__u32 lsndtime;     /* jiffies: when data was last sent */
	__u32 snd_cwnd_stamp; /* jiffies: when cwnd was last validated */
};

struct rate_sample {
	__u32 acked_sacked; /* segments this ACK newly acknowledged or SACKed */
	__u32 losses;       /* segments this ACK newly marked lost */
};
#pragma clang attribute pop

/* The ops table: only the members set below; libbpf matches them to the kernel's by name. */
struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*in_ack_event)(struct sock *sk, __u32 flags);
	__u32 (*undo_cwnd)(struct sock *sk);
	void (*init)(struct sock *sk);
	__u32 flags;
	char name[16];
};

/* Constants of the kernel ABI (include/net/tcp.h, include/net/inet_connection_sock.h, uapi/linux/bpf.h). */
#define TCP_CONG_NON_RESTRICTED 0x1 /* selectable from any network namespace */
#define TCP_CONG_NEEDS_ECN 0x2      /* ECT on every packet, ECN negotiated, CE reported as events */
#define TCP_ECN_DEMAND_CWR 0x4      /* the receiver sets ECE on the ACKs it sends */
#define ICSK_ACK_TIMER 0x2          /* a delayed ACK is pending */
#define ICSK_ACK_NOW 0x10           /* send the next ACK at once */
#define CA_ACK_ECE 0x4              /* in_ack_event: this ACK carries ECE */
#define CA_EVENT_LOSS 3             /* retransmission timeout */
#define CA_EVENT_ECN_NO_CE 4        /* a data packet arrived without CE */
#define CA_EVENT_ECN_IS_CE 5        /* a data packet arrived with CE */
#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define TCP_CA_CWR 2
#define TCP_CA_RECOVERY 3
/* The kernel's pacing ratios at their defaults (net.ipv4.tcp_pacing_ss_ratio / _ca_ratio, percent). */
#define PACING_SS_RATIO 200
#define PACING_CA_RATIO 120
#define USEC_PER_SEC 1000000ULL
/* __builtin_preserve_field_info kinds (libbpf's enum bpf_field_info_kind). */
#define FIELD_BYTE_OFFSET 0
#define FIELD_BYTE_SIZE 1
#define FIELD_LSHIFT_U64 4
#define FIELD_RSHIFT_U64 5
/* cong_control's flag bits (net/ipv4/tcp_input.c, kernel-internal, unchanged for years). */
#define FLAG_DATA_ACKED 0x04       /* the ACK acknowledged new data */
#define FLAG_SYN_ACKED 0x10        /* the ACK acknowledged our SYN */
#define FLAG_DATA_SACKED 0x20      /* the ACK SACKed new data */
#define FLAG_SND_UNA_ADVANCED 0x400 /* SND.UNA moved */
#define FLAG_FORWARD_PROGRESS (FLAG_DATA_ACKED | FLAG_SYN_ACKED | FLAG_DATA_SACKED)
#define CA_EVENT_TX_START 0 /* cwnd_event: the first transmission with nothing in flight */
#define TCP_CA_OPEN 0
#define TCP_CA_DISORDER 1

/* bpf_tcp_send_ack(tp, rcv_nxt): send an ACK for everything before rcv_nxt now (helper 116). */
static long (*bpf_tcp_send_ack)(void *tp, __u32 rcv_nxt) = (void *)116;
/* bpf_jiffies64(): the kernel's jiffies counter (helper 118); TCP's timestamps above are its low 32 bits. */
static __u64 (*bpf_jiffies64)(void) = (void *)118;

/* The kernel's standard TCP window growth (slow start, then +1 MSS per RTT), RFC 8257 §3.4. */
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

/* ---- DCTCP state, kept in icsk_ca_priv (104 bytes available) ---- */

/* α is fixed point: ALPHA_ONE stands for 1.0. 2^20 keeps the EWMA step g·F exact to 1e-6 and the
 * products below (bytes << 20, cwnd · α) well inside 64 bits. */
#define ALPHA_SHIFT 20
#define ALPHA_ONE (1U << ALPHA_SHIFT)
/* g = 1/16 (RFC 8257 §3.3 suggests 1/16; DCTCP paper §3.1, g = 1/16 in its experiments). */
#define G_SHIFT 4
#define MIN_CWND 2

struct dctcp {
	__u32 alpha;        /* DCTCP.Alpha, fixed point */
	__u32 window_end;   /* DCTCP.WindowEnd: a sequence number */
	__u32 bytes_acked;  /* DCTCP.BytesAcked in the current observation window */
	__u32 bytes_marked; /* DCTCP.BytesMarked: the part acknowledged by ACKs with ECE */
	__u32 prior_snd_una; /* SND.UNA at the previous ACK: this ACK acknowledged snd_una - prior_snd_una */
	__u32 loss_cwnd;    /* cwnd before the latest reduction, for undo */
	__u32 ce_state;     /* receiver: DCTCP.CE, the CE bit of the last data packet (RFC 8257 §3.2) */
	__u32 prior_rcv_nxt; /* receiver: RCV.NXT after the previous data packet */
	__u32 prr_delivered; /* segments delivered since the current reduction began (RFC 6937's prr_delivered) */
	__u32 prr_high_seq;  /* high_seq of the reduction prr_delivered counts for */
	__u32 init_cwnd;     /* segments: the initial window, the restart window after idle */
};

static __attribute__((always_inline)) struct tcp_sock *tcp(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __attribute__((always_inline)) struct dctcp *state(struct sock *sk)
{
	return (struct dctcp *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* Sequence arithmetic modulo 2^32. */
static __attribute__((always_inline)) int seq_after(__u32 a, __u32 b)
{
	return (int)(b - a) < 0;
}

static __attribute__((always_inline)) __u32 max_u32(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

/* cwnd·(1 − α/2), RFC 8257 §3.3, at least 2 segments. */
static __attribute__((always_inline)) __u32 reduced(struct dctcp *ca, __u32 cwnd)
{
	__u32 cut = (__u32)(((__u64)cwnd * ca->alpha) >> (ALPHA_SHIFT + 1));

	return max_u32(cwnd - cut, MIN_CWND);
}

/* The kernel's congestion state (TCP_CA_Open ... TCP_CA_Loss), a 5-bit field: its byte, size and shifts are
 * relocated against the running kernel like every other field. */
static __attribute__((always_inline)) __u32 ca_state(struct sock *sk)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	const char *base = (const char *)icsk;
	unsigned long long v = 0;

	switch (__builtin_preserve_field_info(icsk->icsk_ca_state, FIELD_BYTE_SIZE)) {
	case 1:
		v = *(const __u8 *)(base + __builtin_preserve_field_info(icsk->icsk_ca_state, FIELD_BYTE_OFFSET));
		break;
	case 2:
		v = *(const unsigned short *)(base + __builtin_preserve_field_info(icsk->icsk_ca_state, FIELD_BYTE_OFFSET));
		break;
	case 4:
		v = *(const __u32 *)(base + __builtin_preserve_field_info(icsk->icsk_ca_state, FIELD_BYTE_OFFSET));
		break;
	default:
		v = *(const __u64 *)(base + __builtin_preserve_field_info(icsk->icsk_ca_state, FIELD_BYTE_OFFSET));
	}
	v <<= __builtin_preserve_field_info(icsk->icsk_ca_state, FIELD_LSHIFT_U64);
	v >>= __builtin_preserve_field_info(icsk->icsk_ca_state, FIELD_RSHIFT_U64);
	return (__u32)v;
}

/* Skipped hooks. On Linux 6.18 (the CI machine kind) the kernel now and then calls this algorithm's hooks without
 * running them: traced (docs/EMULATION.md), every such call came from a softirq that ran on top of one unrelated
 * task of the machine, and a skipped hook returns a stale stack word for a value (2 165 326 096: the low 32 bits of
 * a kernel text address, whose bit 31 is always set on x86-64). Two such values would steer the connection: a
 * skipped ssthresh() leaves snd_ssthresh above TCP_INFINITE_SSTHRESH, a skipped undo_cwnd() sets snd_cwnd to it.
 * Neither is ever a value TCP means, so they are recognized and replaced by what DCTCP would have answered. The
 * per-ACK window is this program's alone (cong_control below): a skipped cong_control() leaves cwnd as it was for
 * that ACK. */
static __attribute__((always_inline)) void repair_skipped_hooks(struct sock *sk)
{
	struct tcp_sock *tp = tcp(sk);
	struct dctcp *ca = state(sk);

	if (tp->snd_ssthresh > TCP_INFINITE_SSTHRESH) {
		/* The window when the reduction began is prior_cwnd (the kernel sets it before asking); a loss is
		 * answered by halving (RFC 8257 §3.5), an ECN reduction by DCTCP's cut. */
		if (ca_state(sk) >= TCP_CA_RECOVERY)
			tp->snd_ssthresh = max_u32(tp->prior_cwnd >> 1, MIN_CWND);
		else
			tp->snd_ssthresh = reduced(ca, tp->prior_cwnd);
		ca->loss_cwnd = tp->prior_cwnd;
	}
	if (tp->snd_cwnd > TCP_INFINITE_SSTHRESH)
		tp->snd_cwnd = max_u32(tp->prior_cwnd, MIN_CWND); /* an undo returns to the window before the reduction */
}

/* sk_pacing_rate as the kernel sets it for an algorithm without its own cong_control (tcp_update_pacing_rate):
 * cwnd·MSS/SRTT times 2 in slow start (cwnd below half of ssthresh) or 1.2 after, capped by SO_MAX_PACING_RATE.
 * Pacing binds where a socket asked for it (a workload's `rate`; the hosts have no fq qdisc, which would pace
 * every socket); TCP's small-queue limit and segment autosizing read it too. */
static __attribute__((always_inline)) void update_pacing_rate(struct sock *sk)
{
	struct tcp_sock *tp = tcp(sk);
	unsigned long long rate = (unsigned long long)tp->mss_cache * ((USEC_PER_SEC / 100) << 3);
	unsigned long long cap = sk->sk_max_pacing_rate;

	rate *= tp->snd_cwnd < tp->snd_ssthresh / 2 ? PACING_SS_RATIO : PACING_CA_RATIO;
	rate *= max_u32(tp->snd_cwnd, tp->packets_out);
	if (tp->srtt_us)
		rate /= tp->srtt_us;
	sk->sk_pacing_rate = rate < cap ? rate : cap;
}

/* ---- Hooks. Each program takes the raw argument array the kernel passes to struct_ops programs. ---- */

/* Connection established. RFC 8257 §3.3: the first observation window ends at SND.NXT; α starts at 1, the
 * conservative choice (the paper's senders, and ecnlab's simulated DCTCP by default). */
SEC("struct_ops/ecnlab_dctcp_init")
int ecnlab_dctcp_init(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	struct tcp_sock *tp = tcp(sk);
	struct dctcp *ca = state(sk);

	ca->alpha = ALPHA_ONE;
	ca->window_end = tp->snd_nxt;
	ca->bytes_acked = 0;
	ca->bytes_marked = 0;
	ca->prior_snd_una = tp->snd_una;
	ca->loss_cwnd = 0;
	ca->ce_state = 0;
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->prr_delivered = 0;
	ca->prr_high_seq = tp->high_seq;
	ca->init_cwnd = tp->snd_cwnd; /* the kernel sets the initial window just before */
	return 0;
}

/* Every ACK, after the kernel advanced SND.UNA: RFC 8257 §3.3 steps 1-8. Bytes are counted from the cumulative
 * ACK (SACK blocks are ignored, as the RFC says); once SND.UNA passes the window's end, the fraction F of marked
 * bytes updates α ← (1 − g)·α + g·F and a new window starts, ending at SND.NXT. */
SEC("struct_ops/ecnlab_dctcp_in_ack_event")
int ecnlab_dctcp_in_ack_event(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	__u32 flags = (__u32)ctx[1];
	struct tcp_sock *tp = tcp(sk);
	struct dctcp *ca = state(sk);
	__u32 una = tp->snd_una;
	__u32 acked = una - ca->prior_snd_una;

	repair_skipped_hooks(sk);
	ca->prior_snd_una = una;
	ca->bytes_acked += acked;
	if (flags & CA_ACK_ECE)
		ca->bytes_marked += acked;

	if (!seq_after(una, ca->window_end))
		return 0;

	if (ca->bytes_acked > 0) {
		__u64 f = ((__u64)ca->bytes_marked << ALPHA_SHIFT) / ca->bytes_acked; /* F, fixed point */
		__u32 alpha = ca->alpha - (ca->alpha >> G_SHIFT) + (__u32)(f >> G_SHIFT);

		ca->alpha = alpha > ALPHA_ONE ? ALPHA_ONE : alpha;
	}
	ca->window_end = tp->snd_nxt;
	ca->bytes_acked = 0;
	ca->bytes_marked = 0;
	return 0;
}

/* The kernel asks for the new slow-start threshold when a reduction starts: on ECE (entering CWR, at most once
 * per window, RFC 3168 §6.1.2) and on loss. RFC 8257 §3.3: cwnd ← cwnd·(1 − α/2), which cong_control below
 * reaches over the round trip by proportional rate reduction. A loss is overridden to a halving in set_state / cwnd_event
 * below (§3.5). */
SEC("struct_ops/ecnlab_dctcp_ssthresh")
__u32 ecnlab_dctcp_ssthresh(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	struct tcp_sock *tp = tcp(sk);
	struct dctcp *ca = state(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	return reduced(ca, tp->snd_cwnd);
}

/* RFC 8257 §3.5: a loss is answered as conventional TCP answers it, by halving. Called where the kernel has
 * just asked ssthresh() for a fresh loss reduction. */
static __attribute__((always_inline)) void react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = tcp(sk);

	tp->snd_ssthresh = max_u32(tp->prior_cwnd >> 1, MIN_CWND);
}

/* State changes. The kernel calls this before it stores the new state, so ca_state() is still the old one.
 * - Fast recovery entered from Open or Disorder: the kernel called ssthresh() just before (a recovery entered
 *   during an ECN reduction keeps that reduction: one reduction per window).
 * - A reduction ends (CWR or a recovery not undone, back to Open or Disorder): cwnd = ssthresh, the reduction's
 *   target, which the kernel sets itself only for algorithms without cong_control (tcp_end_cwnd_reduction). This
 *   is also where a tail-loss probe's reduction (begun and ended on one ACK) takes effect. */
SEC("struct_ops/ecnlab_dctcp_set_state")
int ecnlab_dctcp_set_state(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	__u8 new_state = (__u8)ctx[1];
	struct tcp_sock *tp = tcp(sk);
	__u32 old_state = ca_state(sk);

	if (new_state == TCP_CA_RECOVERY && old_state < TCP_CA_CWR)
		react_to_loss(sk);
	if ((new_state == TCP_CA_OPEN || new_state == TCP_CA_DISORDER) &&
	    (old_state == TCP_CA_CWR || (old_state == TCP_CA_RECOVERY && tp->undo_marker)) &&
	    tp->snd_ssthresh < TCP_INFINITE_SSTHRESH)
		tp->snd_cwnd = max_u32(tp->snd_ssthresh, MIN_CWND);
	return 0;
}

/* Restart after idle (RFC 5681 §4.1, RFC 2861), as the kernel does it for algorithms without cong_control
 * (tcp_cwnd_restart) when net.ipv4.tcp_slow_start_after_idle is set: on the first transmission after more than an
 * RTO without any, ssthresh keeps at least 3/4 of cwnd, and cwnd halves for every RTO of idleness, down to the
 * initial window. lsndtime is still the previous transmission's time here. */
static __attribute__((always_inline)) void restart_after_idle(struct sock *sk)
{
	struct tcp_sock *tp = tcp(sk);
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct dctcp *ca = state(sk);
	__u32 now = (__u32)bpf_jiffies64();
	int idle = (int)(now - tp->lsndtime);
	__u32 rto = icsk->icsk_rto;
	__u32 cwnd = tp->snd_cwnd;
	__u32 restart = ca->init_cwnd < cwnd ? ca->init_cwnd : cwnd;
	int i;

	if (!sk->__sk_common.skc_net.net->ipv4.sysctl_tcp_slow_start_after_idle || rto == 0 || idle <= (int)rto)
		return;
	tp->snd_ssthresh = max_u32(tp->snd_ssthresh, (cwnd >> 1) + (cwnd >> 2));
	for (i = 0; i < 32; i++) { /* bounded for the verifier: 32 halvings empty any window */
		idle -= (int)rto;
		if (idle <= 0 || cwnd <= restart)
			break;
		cwnd >>= 1;
	}
	tp->snd_cwnd = max_u32(cwnd, restart);
	tp->snd_cwnd_stamp = now;
}

/* The receiver's CE state machine, RFC 8257 §3.2 (the paper's Figure 10): ECE on an ACK says exactly whether
 * the data it acknowledges carried CE. With delayed ACKs, a change of the CE bit between two data packets
 * first flushes the pending delayed ACK for the earlier packets with the earlier ECE value, then makes the next
 * ACK immediate; from here on every ACK carries the new value (DEMAND_CWR is the kernel's "send ECE" bit). */
static __attribute__((always_inline)) void set_ece(struct tcp_sock *tp, __u32 ce)
{
	if (ce)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

static __attribute__((always_inline)) void receiver_ce(struct sock *sk, __u32 ce)
{
	struct tcp_sock *tp = tcp(sk);
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct dctcp *ca = state(sk);

	if (ce != ca->ce_state) {
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			/* The packets before this one were not acknowledged yet: acknowledge them with their CE bit. */
			set_ece(tp, ca->ce_state);
			bpf_tcp_send_ack(tp, ca->prior_rcv_nxt);
		}
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	/* The kernel calls this after RCV.NXT moved past the packet, so this is the ACK number covering it. */
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->ce_state = ce;
	set_ece(tp, ce);
}

SEC("struct_ops/ecnlab_dctcp_cwnd_event")
int ecnlab_dctcp_cwnd_event(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	int ev = (int)ctx[1];

	if (ev == CA_EVENT_TX_START)
		restart_after_idle(sk);
	else if (ev == CA_EVENT_ECN_IS_CE)
		receiver_ce(sk, 1);
	else if (ev == CA_EVENT_ECN_NO_CE)
		receiver_ce(sk, 0);
	else if (ev == CA_EVENT_LOSS)
		react_to_loss(sk); /* a retransmission timeout: ssthresh() was called just before */
	return 0;
}

/* A reduction found spurious (the kernel's undo after a false fast retransmit or timeout): return to the window
 * held before it. */
SEC("struct_ops/ecnlab_dctcp_undo_cwnd")
__u32 ecnlab_dctcp_undo_cwnd(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];

	return max_u32(tcp(sk)->snd_cwnd, state(sk)->loss_cwnd);
}

static __attribute__((always_inline)) int min_int(int a, int b)
{
	return a < b ? a : b;
}

static __attribute__((always_inline)) int max_int(int a, int b)
{
	return a > b ? a : b;
}

/* Proportional rate reduction (RFC 6937 §3), as Linux implements it for every algorithm without a cong_control of
 * its own, so that the window falls to ssthresh over the round trip the reduction lasts rather than at once: while
 * more than ssthresh segments are in flight (RFC 6675's pipe), send ssthresh/RecoverFS of what is delivered (Linux
 * takes RecoverFS to be the window when the reduction began, prior_cwnd); below it, catch up by what is delivered,
 * plus one segment when the ACK advanced SND.UNA and marked nothing lost (Linux's condition on RFC 6937's
 * slow-start reduction bound), never beyond ssthresh. Until something has been sent in the reduction, each ACK
 * lets one segment go (the fast retransmit after a loss). */
static __attribute__((always_inline)) void prr(struct sock *sk, const struct rate_sample *rs, int flag)
{
	struct tcp_sock *tp = tcp(sk);
	struct dctcp *ca = state(sk);
	__u32 delivered = rs->acked_sacked;
	int pipe = (int)(tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out);
	int room = (int)tp->snd_ssthresh - pipe;
	int prr_out = (int)tp->prr_out;
	int sndcnt;

	if (delivered == 0 || tp->prior_cwnd == 0)
		return;
	if (tp->high_seq != ca->prr_high_seq) {
		/* A reduction began since the last count (the kernel sets high_seq and resets prr_out then). */
		ca->prr_high_seq = tp->high_seq;
		ca->prr_delivered = 0;
	}
	ca->prr_delivered += delivered;
	if (room < 0) {
		__u64 share = ((__u64)tp->snd_ssthresh * ca->prr_delivered + tp->prior_cwnd - 1) / tp->prior_cwnd;

		sndcnt = (int)share - prr_out;
	} else {
		sndcnt = max_int((int)ca->prr_delivered - prr_out, (int)delivered);
		if ((flag & FLAG_SND_UNA_ADVANCED) && rs->losses == 0)
			sndcnt++;
		sndcnt = min_int(room, sndcnt);
	}
	sndcnt = max_int(sndcnt, prr_out ? 0 : 1);
	tp->snd_cwnd = (__u32)max_int(pipe + sndcnt, 1);
}

/* The window, on every ACK: the kernel runs no per-ACK window code of its own for an algorithm with cong_control,
 * so a hook it skips cannot move cwnd. This is the kernel's own per-ACK path, kept here: during a reduction (CWR
 * after ECE, fast recovery after loss) proportional rate reduction brings cwnd towards ssthresh (RFC 8257 §3.3's
 * cwnd·(1 − α/2)); otherwise standard TCP growth (RFC 8257 §3.4; RFC 5681 §3.1, the kernel's slow start and
 * congestion avoidance, tcp_reno_cong_avoid) on ACKs of new data, or of any forward progress where the connection
 * has seen more reordering than net.ipv4.tcp_reordering (the kernel's tcp_may_raise_cwnd). */
SEC("struct_ops/ecnlab_dctcp_cong_control")
int ecnlab_dctcp_cong_control(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	__u32 ack = (__u32)ctx[1];
	int flag = (int)ctx[2];
	const struct rate_sample *rs = (const struct rate_sample *)ctx[3];
	struct tcp_sock *tp = tcp(sk);
	__u32 st = ca_state(sk);
	int grows = (int)tp->reordering > sk->__sk_common.skc_net.net->ipv4.sysctl_tcp_reordering
			    ? flag & FLAG_FORWARD_PROGRESS
			    : flag & FLAG_DATA_ACKED;

	repair_skipped_hooks(sk);
	if (st == TCP_CA_CWR || st == TCP_CA_RECOVERY)
		prr(sk, rs, flag);
	else if (grows)
		tcp_reno_cong_avoid(sk, ack, rs->acked_sacked);
	update_pacing_rate(sk);
	return 0;
}

SEC(".struct_ops")
struct tcp_congestion_ops ecnlab_dctcp = {
	.init = (void *)ecnlab_dctcp_init,
	.in_ack_event = (void *)ecnlab_dctcp_in_ack_event,
	.ssthresh = (void *)ecnlab_dctcp_ssthresh,
	.set_state = (void *)ecnlab_dctcp_set_state,
	.cwnd_event = (void *)ecnlab_dctcp_cwnd_event,
	.undo_cwnd = (void *)ecnlab_dctcp_undo_cwnd,
	.cong_control = (void *)ecnlab_dctcp_cong_control,
	/* Without NEEDS_ECN the kernel never reports CE to the algorithm and its receiver latches ECE as RFC 3168
	 * does; without NON_RESTRICTED a network namespace other than the initial one cannot select it. */
	.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED,
	.name = ECNLAB_CA_NAME,
};

char _license[] SEC("license") = "Dual MIT/GPL";
