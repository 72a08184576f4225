// ns-3.44 counterpart of ecnlab's scenarios/dctcp-8flows.toml, used only as a
// speed / sanity baseline for ecnlab (see README.md in this directory).
//
// Topology: star of N+1 hosts around one switch (h0 = receiver, h1..hN =
// senders), every link 10 Gb/s point-to-point with 20.5 us one-way delay.
// The switch egress port towards h0 is the bottleneck; every switch port has a
// RED queue disc configured as a DCTCP step marker (K = MinTh = MaxTh, QW = 1,
// ECN marking, no hard drop). N long-lived DCTCP bulk flows hN -> h0.
//
// Output: one JSON line on stdout. Everything else (warnings) goes to stderr.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <sys/resource.h>
#include <vector>

using namespace ns3;

namespace
{

// ---------------------------------------------------------------------------
// Bottleneck statistics collected from queue-disc trace sources.
// ---------------------------------------------------------------------------
struct BottleneckProbe
{
    double windowStart = 0.1; // seconds; samples before this are ignored

    // Time-weighted queue length (packets in the queue disc), exact: the
    // "PacketsInQueue" traced value reports every change, so each level is
    // weighted by how long it was held. Equivalent to sampling continuously.
    std::vector<double> timeHist; // seconds spent at each queue length
    uint32_t curLen = 0;
    double lastChange = 0.0;

    // Queue length seen by each arriving packet (excluding itself), i.e. the
    // quantity RED compares against K when it decides to mark.
    std::vector<uint64_t> enqHist;

    Ptr<QueueDisc> qdisc;

    void Account(double now)
    {
        double from = std::max(lastChange, windowStart);
        if (now > from)
        {
            Grow(timeHist, curLen);
            timeHist[curLen] += now - from;
        }
        lastChange = now;
    }

    void OnLenChange(uint32_t /*oldVal*/, uint32_t newVal)
    {
        Account(Simulator::Now().GetSeconds());
        curLen = newVal;
    }

    void OnEnqueue(Ptr<const QueueDiscItem> /*item*/)
    {
        if (Simulator::Now().GetSeconds() < windowStart)
        {
            return;
        }
        // The Enqueue trace fires after the packet was counted.
        uint32_t seen = qdisc->GetNPackets();
        seen = seen > 0 ? seen - 1 : 0;
        Grow(enqHist, seen);
        enqHist[seen]++;
    }

    template <typename T>
    static void Grow(std::vector<T>& v, uint32_t idx)
    {
        if (idx >= v.size())
        {
            v.resize(idx + 1, T(0));
        }
    }
};

template <typename T>
void
HistStats(const std::vector<T>& h, double& mean, double& p99)
{
    double total = 0.0;
    double weighted = 0.0;
    for (size_t i = 0; i < h.size(); ++i)
    {
        total += static_cast<double>(h[i]);
        weighted += static_cast<double>(h[i]) * static_cast<double>(i);
    }
    mean = 0.0;
    p99 = 0.0;
    if (total <= 0.0)
    {
        return;
    }
    mean = weighted / total;
    double cum = 0.0;
    for (size_t i = 0; i < h.size(); ++i)
    {
        cum += static_cast<double>(h[i]);
        if (cum >= 0.99 * total)
        {
            p99 = static_cast<double>(i);
            return;
        }
    }
    p99 = static_cast<double>(h.size() - 1);
}

struct WindowSnapshot
{
    uint64_t rxBytes = 0;
    QueueDisc::Stats q{};
};

} // namespace

int
main(int argc, char* argv[])
{
    double simTime = 1.1;
    double warmup = 0.1;
    uint32_t nSenders = 8;
    std::string linkRate = "10Gbps";
    double linkDelayUs = 20.5;
    uint32_t markK = 65;
    uint32_t queueLimitPkts = 200; // 200 x 1500 B = 300 KB
    uint32_t segSize = 1460;
    uint32_t bufBytes = 16 * 1024 * 1024;
    double minRtoMs = 5.0;
    double startStaggerUs = 0.0;

    CommandLine cmd(__FILE__);
    cmd.AddValue("simTime", "simulated time in seconds", simTime);
    cmd.AddValue("warmup", "start of the measurement window in seconds", warmup);
    cmd.AddValue("senders", "number of sender hosts / flows", nSenders);
    cmd.AddValue("linkRate", "rate of every link", linkRate);
    cmd.AddValue("linkDelayUs", "one-way propagation delay of every link (us)", linkDelayUs);
    cmd.AddValue("K", "DCTCP marking threshold (packets)", markK);
    cmd.AddValue("queuePkts", "switch queue-disc limit (packets of 1500 B)", queueLimitPkts);
    cmd.AddValue("minRtoMs", "TCP minimum RTO (ms)", minRtoMs);
    cmd.AddValue("startStaggerUs", "flow i starts at i*startStaggerUs (us)", startStaggerUs);
    cmd.Parse(argc, argv);

    if (warmup >= simTime)
    {
        warmup = 0.0;
    }

    // ---------------------------------------------------------------- TCP ---
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpDctcp::GetTypeId()));
    Config::SetDefault("ns3::TcpDctcp::DctcpShiftG", DoubleValue(1.0 / 16.0));
    Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue("On"));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segSize));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(bufBytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(bufBytes));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MicroSeconds(minRtoMs * 1000.0)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    // No timestamp option: keeps a full segment at 1460 + 40 = 1500 B of IP.
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));

    // ----------------------------------------------------------- topology ---
    NodeContainer sw;
    sw.Create(1);
    NodeContainer hosts;
    hosts.Create(nSenders + 1); // hosts.Get(0) is the receiver

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue(linkRate));
    p2p.SetDeviceAttribute("Mtu", UintegerValue(1500));
    p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(linkDelayUs * 1000.0)));
    // Tiny device queues so packets wait in the queue disc.
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));

    std::vector<NetDeviceContainer> links;
    for (uint32_t i = 0; i <= nSenders; ++i)
    {
        links.push_back(p2p.Install(hosts.Get(i), sw.Get(0))); // [0]=host, [1]=switch
    }

    InternetStackHelper stack;
    stack.InstallAll();

    // Switch ports: RED as a DCTCP step marker. With MinTh == MaxTh, QW = 1 and
    // Gentle off, RED marks (forced mark) whenever the instantaneous queue
    // length seen on arrival is >= K. Queue limit counted in packets.
    TrafficControlHelper redTc;
    redTc.SetRootQueueDisc("ns3::RedQueueDisc",
                           "MaxSize",
                           QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, queueLimitPkts)),
                           "MinTh",
                           DoubleValue(markK),
                           "MaxTh",
                           DoubleValue(markK),
                           "QW",
                           DoubleValue(1.0),
                           "Gentle",
                           BooleanValue(false),
                           "UseEcn",
                           BooleanValue(true),
                           "UseHardDrop",
                           BooleanValue(false),
                           "MeanPktSize",
                           UintegerValue(1500),
                           "LinkBandwidth",
                           DataRateValue(DataRate(linkRate)),
                           "LinkDelay",
                           TimeValue(NanoSeconds(linkDelayUs * 1000.0)));
    // Hosts: plain FIFO (instead of the FqCoDel default that Ipv4AddressHelper
    // would install), large enough never to drop.
    TrafficControlHelper hostTc;
    hostTc.SetRootQueueDisc("ns3::FifoQueueDisc",
                            "MaxSize",
                            QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 100000)));

    Ptr<QueueDisc> bottleneck;
    for (uint32_t i = 0; i <= nSenders; ++i)
    {
        hostTc.Install(links[i].Get(0));
        QueueDiscContainer qdc = redTc.Install(links[i].Get(1));
        if (i == 0)
        {
            bottleneck = qdc.Get(0);
        }
    }

    Ipv4AddressHelper addr;
    std::vector<Ipv4InterfaceContainer> ifaces;
    for (uint32_t i = 0; i <= nSenders; ++i)
    {
        std::string net = "10.1." + std::to_string(i + 1) + ".0";
        addr.SetBase(net.c_str(), "255.255.255.0");
        ifaces.push_back(addr.Assign(links[i]));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // -------------------------------------------------------- applications ---
    const uint16_t port = 5000;
    PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sinkApps = sinkHelper.Install(hosts.Get(0));
    sinkApps.Start(Seconds(0.0));
    sinkApps.Stop(Seconds(simTime + 1.0));
    Ptr<PacketSink> sink = DynamicCast<PacketSink>(sinkApps.Get(0));

    Ipv4Address dst = ifaces[0].GetAddress(0);
    for (uint32_t i = 1; i <= nSenders; ++i)
    {
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(dst, port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0)); // unlimited
        bulk.SetAttribute("SendSize", UintegerValue(segSize));
        ApplicationContainer app = bulk.Install(hosts.Get(i));
        app.Start(MicroSeconds((i - 1) * startStaggerUs));
        app.Stop(Seconds(simTime + 1.0));
    }

    // ------------------------------------------------------- measurement ---
    BottleneckProbe probe;
    probe.windowStart = warmup;
    probe.qdisc = bottleneck;
    bottleneck->TraceConnectWithoutContext(
        "PacketsInQueue",
        MakeCallback(&BottleneckProbe::OnLenChange, &probe));
    bottleneck->TraceConnectWithoutContext("Enqueue",
                                           MakeCallback(&BottleneckProbe::OnEnqueue, &probe));

    WindowSnapshot atWarmup;
    Simulator::Schedule(Seconds(warmup), [&]() {
        atWarmup.rxBytes = sink->GetTotalRx();
        atWarmup.q = bottleneck->GetStats();
    });

    Simulator::Stop(Seconds(simTime));

    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t1 = std::chrono::steady_clock::now();
    double wall = std::chrono::duration<double>(t1 - t0).count();

    double endT = Simulator::Now().GetSeconds();
    probe.Account(endT);
    uint64_t events = Simulator::GetEventCount();

    const QueueDisc::Stats& qs = bottleneck->GetStats();
    uint64_t rxBytes = sink->GetTotalRx();
    double window = endT - warmup;
    double goodputGbps =
        window > 0 ? static_cast<double>(rxBytes - atWarmup.rxBytes) * 8.0 / window / 1e9 : 0.0;
    uint64_t enqWin = qs.nTotalEnqueuedPackets - atWarmup.q.nTotalEnqueuedPackets;
    uint64_t markWin = qs.nTotalMarkedPackets - atWarmup.q.nTotalMarkedPackets;
    uint64_t dropWin = qs.nTotalDroppedPackets - atWarmup.q.nTotalDroppedPackets;
    double markedFraction = enqWin > 0 ? static_cast<double>(markWin) / enqWin : 0.0;

    double qMeanT = 0;
    double qP99T = 0;
    double qMeanE = 0;
    double qP99E = 0;
    HistStats(probe.timeHist, qMeanT, qP99T);
    HistStats(probe.enqHist, qMeanE, qP99E);

    uint64_t bottleneckPkts = qs.nTotalSentPackets; // handed to the device, whole run

    Simulator::Destroy();

    struct rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    double peakRssMib = static_cast<double>(ru.ru_maxrss) / 1024.0; // ru_maxrss is KiB on Linux

    std::printf("{\"sim\":\"ns-3.44\",\"scenario\":\"dctcp-8flows\",\"senders\":%u,"
                "\"sim_time_s\":%.6f,\"wall_time_s\":%.6f,\"events\":%llu,\"events_per_s\":%.1f,"
                "\"bottleneck_pkts\":%llu,\"bottleneck_pkts_per_s\":%.1f,"
                "\"goodput_gbps\":%.6f,\"queue_mean_pkts\":%.4f,\"queue_p99_pkts\":%.1f,"
                "\"queue_sample\":\"time-weighted\","
                "\"queue_mean_pkts_at_enqueue\":%.4f,\"queue_p99_pkts_at_enqueue\":%.1f,"
                "\"marked_fraction\":%.6f,\"marked_fraction_basis\":\"enqueued\","
                "\"marked_pkts\":%llu,\"enqueued_pkts\":%llu,"
                "\"drops\":%llu,\"drops_scope\":\"bottleneck, whole run\",\"drops_window\":%llu,"
                "\"peak_rss_mib\":%.1f,\"window_s\":[%.3f,%.3f]}\n",
                nSenders,
                endT,
                wall,
                static_cast<unsigned long long>(events),
                wall > 0 ? events / wall : 0.0,
                static_cast<unsigned long long>(bottleneckPkts),
                wall > 0 ? bottleneckPkts / wall : 0.0,
                goodputGbps,
                qMeanT,
                qP99T,
                qMeanE,
                qP99E,
                markedFraction,
                static_cast<unsigned long long>(markWin),
                static_cast<unsigned long long>(enqWin),
                static_cast<unsigned long long>(qs.nTotalDroppedPackets),
                static_cast<unsigned long long>(dropWin),
                peakRssMib,
                warmup,
                endT);
    return 0;
}
