import AlertChannels
import Alerts
import AsyncHTTPClient
import Config
import Foundation
import Logging

/// The alerts' channels that leave outletd, wired to `AlertChannels`' senders: each delivery becomes a `Notice` in
/// its channel's language (its id the delivery's, so that a receiver that sees a retry knows it), and each
/// `DeliveryError` an ``AlertSendFailure`` of the same kind.
enum AlertSenders {
    /// The senders `configuration` turns on: webhooks always, Web Push with `alerts.vapid_key_file`, email with
    /// `alerts.smtp_host`. A channel without its sender is failed at once with the reason ("not configured").
    static func make(_ configuration: OutletdConfiguration, logger: Logger) -> [AlertChannelKind: any AlertSender] {
        let alerts = configuration.alerts
        let http = HTTPClient.shared
        var senders: [AlertChannelKind: any AlertSender] = [
            .webhook: Webhook(
                sender: WebhookSender(http: http, allowPrivate: alerts.webhookAllowPrivate), pageURL: alerts.pageURL)
        ]
        if !alerts.vapidKeyFile.isEmpty {
            do {
                let key = try VAPIDKey.loadOrCreate(path: alerts.vapidKeyFile)
                senders[.webpush] = WebPush(
                    sender: WebPushSender(
                        key: key, subject: alerts.vapidSubject, http: http, allowPrivate: alerts.webhookAllowPrivate),
                    pageURL: alerts.pageURL)
            } catch {
                logger.error(
                    "Web Push is off: the VAPID key could not be read or created",
                    metadata: ["file": "\(alerts.vapidKeyFile)", "error": "\(error)"])
            }
        }
        if !alerts.smtpHost.isEmpty {
            senders[.email] = Mail(
                sender: MailSender(
                    settings: SMTPSettings(
                        host: alerts.smtpHost, port: alerts.smtpPort, starttls: alerts.smtpStartTLS,
                        implicitTLS: alerts.smtpImplicitTLS,
                        username: alerts.smtpUsername.isEmpty ? nil : alerts.smtpUsername,
                        password: alerts.smtpPassword.isEmpty ? nil : alerts.smtpPassword, from: alerts.smtpFrom,
                        trustRootsFile: alerts.smtpCAFile.isEmpty ? nil : alerts.smtpCAFile)),
                pageURL: alerts.pageURL)
        }
        return senders
    }

    /// The event as JSON: a webhook's body, a push payload's `event`.
    struct Event: Encodable {
        var type: String
        var incident: Int64
        var kind: String
        var outlet: String?
        var observed: String?
        var limit: String?
        var currency: String?
        var occurredAt: Date
        var subject: String
        var text: String

        enum CodingKeys: String, CodingKey {
            case type, incident, kind, outlet, observed, limit, currency, subject, text
            case occurredAt = "occurred_at"
        }
    }

    static func notice(_ job: AlertDeliveryJob, pageURL: String) -> Notice {
        let message = job.message
        let event = Event(
            type: "alert.\(job.facts.event.rawValue)", incident: job.incidentID, kind: job.facts.kind.rawValue,
            outlet: job.facts.outlet, observed: job.facts.observed, limit: job.facts.limit,
            currency: job.facts.currency, occurredAt: job.occurredAt, subject: message.subject, text: message.text)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        let json = (try? encoder.encode(event)).map { [UInt8]($0) } ?? Array("{}".utf8)
        // The delivery's id and its event's time (µs): the same on every retry, and not the same for another alert
        // that a new primary, promoted from a standby that lacked the last commits, gives the id again.
        let micros = Int64((job.occurredAt.timeIntervalSince1970 * 1_000_000).rounded())
        return Notice(
            id: "outletd-delivery-\(job.id)-\(micros)", subject: message.subject, text: message.text,
            url: pageURL.isEmpty ? nil : pageURL, json: json, occurredAt: job.occurredAt)
    }

    static func failure(_ error: DeliveryError) -> AlertSendFailure {
        switch error {
        case .retryable(let reason): .retryable(reason)
        case .permanent(let reason): .permanent(reason)
        }
    }

    struct Webhook: AlertSender {
        let sender: WebhookSender
        let pageURL: String
        func send(_ job: AlertDeliveryJob) async throws(AlertSendFailure) {
            guard let secret = job.secret else { throw .permanent("the webhook has no secret") }
            do { try await sender.send(notice(job, pageURL: pageURL), to: job.target, secret: secret) } catch {
                throw failure(error)
            }
        }
    }

    struct WebPush: AlertSender {
        let sender: WebPushSender
        let pageURL: String
        func send(_ job: AlertDeliveryJob) async throws(AlertSendFailure) {
            let subscription = WebPushSubscription(endpoint: job.target, p256dh: job.p256dh ?? "", auth: job.auth ?? "")
            do {
                try await sender.send(
                    notice(job, pageURL: pageURL), to: subscription, ttl: 86_400,
                    urgency: job.facts.event == .opened ? .high : .normal)
            } catch { throw failure(error) }
        }
    }

    struct Mail: AlertSender {
        let sender: MailSender
        let pageURL: String
        func send(_ job: AlertDeliveryJob) async throws(AlertSendFailure) {
            do { try await sender.send(notice(job, pageURL: pageURL), to: job.target) } catch { throw failure(error) }
        }
    }
}
