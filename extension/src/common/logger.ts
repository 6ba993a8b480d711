/**
 * What the client's modules log through. In the extension it is the "TrainMedic" log output
 * channel (which the language client writes to as well); in unit tests, a recorder.
 */
export interface Logger {
    info(message: string): void;
    warn(message: string): void;
    error(message: string | Error): void;
}
