# A complete configuration for the rsc Terraform provider (crates/terraform-provider): one stream, two consumer
# groups, and read-only views of them. See docs/terraform.md.
#
# Credentials come from the environment, never from this file:
#   export RSC_COORDINATOR=http://localhost:8080      # or several, comma-separated: tried in order
#   export RSC_USERNAME=deployer RSC_PASSWORD=…       # a WRITE principal applies; a READ one can only plan
# (or RSC_TOKEN=rsc_… from POST /coord/v1/auth/login instead of username and password)

terraform {
  required_version = ">= 1.5"
  required_providers {
    rsc = {
      source  = "rsc/rsc"
      version = "~> 0.1"
    }
  }
}

variable "orders_shards" {
  description = "Shards of the orders stream. A change scales online, in place, in both directions."
  type        = number
  default     = 4
}

variable "change_reason" {
  description = "Why this change is made: recorded as `reason` in the coordinator's audit (e.g. the PR's title)."
  type        = string
  default     = "GitOps: reviewed change"
}

provider "rsc" {
  # endpoint = ["http://coordinator-a:8080", "http://coordinator-b:8080"]   # else RSC_COORDINATOR
  requested_by   = "terraform"
  default_reason = var.change_reason
}

# The stream and its default consumer group (named like the prefix).
resource "rsc_stream" "orders" {
  stream_prefix = "orders"
  shard_count   = var.orders_shards

  # After a scale, wait until every group's consumers hold their new assignment, not only until routing
  # switched. The wait is bounded by timeouts.update.
  wait_for_convergence = true
  timeouts {
    update = "15m"
  }
}

# Further consumer groups of the stream: they adopt its shard count.
resource "rsc_consumer_group" "billing" {
  stream_prefix  = rsc_stream.orders.stream_prefix
  consumer_group = "billing"
  # false (the default): destroying the group while members are active fails with GROUP_HAS_ACTIVE_MEMBERS.
  force_destroy = false
}

resource "rsc_consumer_group" "analytics" {
  stream_prefix  = rsc_stream.orders.stream_prefix
  consumer_group = "analytics"
  reason         = "analytics team onboarding"
}

# Read-only views (a READ principal is enough), e.g. for other configurations that only look.
data "rsc_stream" "orders" {
  stream_prefix = rsc_stream.orders.stream_prefix
  depends_on    = [rsc_consumer_group.billing, rsc_consumer_group.analytics]
}

data "rsc_consumer_group" "billing" {
  stream_prefix  = rsc_consumer_group.billing.stream_prefix
  consumer_group = rsc_consumer_group.billing.consumer_group
  depends_on     = [rsc_stream.orders]
}

# Outputs from the data sources: they are read after this apply's changes, so the outputs are current (a
# resource's computed shard_count is refreshed only by the next plan). Volatile values (a group's state or
# metadata version) are better read than output: an output that changed makes `plan -detailed-exitcode` 2.
output "orders_shard_count" {
  value = data.rsc_stream.orders.shard_count
}

output "orders_consumer_groups" {
  value = data.rsc_stream.orders.consumer_groups
}

output "billing_routes_shards" {
  value = data.rsc_consumer_group.billing.shard_count
}
