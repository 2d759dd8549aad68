//! numalab-bmc against real components on loopback: OpenIPMI's BMC simulator
//! (`ipmi_sim`) read through `ipmitool -I lanplus`, DMTF's Redfish mock-up data served
//! over HTTP and TLS, and a stand-in `ipmitool` answering DCMI with responses
//! constructed from the specification (the simulator does not implement DCMI).

mod common;
mod dcmi;
mod ipmi_sim;
mod redfish;
mod secrets;
