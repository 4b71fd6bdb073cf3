// The Prometheus text exposition served at /metrics: Triton's metric names, labelled by model,
// version and traffic class, and latency histograms per class.
//
//   nv_inference_request_success / _failure (with reason)  counters of requests
//   nv_inference_count / nv_inference_exec_count          rows inferred / batches run
//   nv_inference_queue_duration_us, nv_inference_compute_infer_duration_us,
//   nv_inference_request_duration_us                       cumulative microseconds
//   nv_inference_pending_request_count                     gauge: queued or running now
//   nv_inference_request_latency_us, nv_inference_queue_latency_us   histograms (buckets in us)
#pragma once
#include <string>
#include <vector>

#include "serve/served_model.h"

namespace fusor::serve {

// `decoders`: their requests queued or running (generation_pending), shown in the same gauge as
// the encoders', nv_inference_pending_request_count, which fusor plan's autoscaler watches.
std::string prometheus_text(const std::vector<ServedModel*>& models, const std::vector<PendingRequests>& decoders = {});

}  // namespace fusor::serve
