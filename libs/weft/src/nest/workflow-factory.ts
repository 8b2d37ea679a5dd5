import type { InjectionToken, Type } from '@nestjs/common';
import {
  OPTIONAL_DEPS_METADATA,
  OPTIONAL_PROPERTY_DEPS_METADATA,
  PARAMTYPES_METADATA,
  PROPERTY_DEPS_METADATA,
  SELF_DECLARED_DEPS_METADATA,
} from '@nestjs/common/constants.js';
import { ModuleRef } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import type { WorkflowFactory, WorkflowInstance } from '../common/types.js';
import { WorkflowDependencyError } from './nest-errors.js';

interface Dependency {
  token: unknown;
  optional: boolean;
  label: string;
}

type ForwardRef = { forwardRef: () => InjectionToken };

function unwrap(token: unknown): unknown {
  const fwd = token as ForwardRef | undefined;
  return fwd && typeof fwd === 'object' && typeof fwd.forwardRef === 'function' ? fwd.forwardRef() : token;
}

function label(token: unknown, where: string): string {
  const name = typeof token === 'function' ? token.name : typeof token === 'symbol' ? token.toString() : JSON.stringify(token);
  return `${name ?? 'undefined'} at ${where}`;
}

/** The constructor parameters Nest would inject, honouring `@Inject(token)`, `forwardRef` and `@Optional`. */
function constructorDependencies(metatype: Type): Dependency[] {
  const types = [...((Reflect.getMetadata(PARAMTYPES_METADATA, metatype) as unknown[] | undefined) ?? [])];
  const self = (Reflect.getMetadata(SELF_DECLARED_DEPS_METADATA, metatype) as Array<{ index: number; param: unknown }>) ?? [];
  for (const { index, param } of self) types[index] = param;
  const optional = new Set((Reflect.getMetadata(OPTIONAL_DEPS_METADATA, metatype) as number[] | undefined) ?? []);
  return types.map((t, i) => {
    const token = unwrap(t);
    return { token, optional: optional.has(i), label: label(token, `index [${i}]`) };
  });
}

function propertyDependencies(metatype: Type): Array<Dependency & { key: string | symbol }> {
  const props = (Reflect.getMetadata(PROPERTY_DEPS_METADATA, metatype) as Array<{ key: string | symbol; type: unknown }>) ?? [];
  const optional = new Set((Reflect.getMetadata(OPTIONAL_PROPERTY_DEPS_METADATA, metatype) as Array<string | symbol>) ?? []);
  return props.map(({ key, type }) => {
    const token = unwrap(type);
    return { key, token, optional: optional.has(key), label: label(token, `property "${String(key)}"`) };
  });
}

/** Looks in the class's own module first, then anywhere (imports, global modules). */
async function resolveDependency(className: string, dep: Dependency, host: ModuleRef | undefined, global: ModuleRef): Promise<unknown> {
  if (dep.token === undefined || dep.token === null) {
    if (dep.optional) return undefined;
    throw new WorkflowDependencyError(className, dep.label, 'the type is undefined: a circular import? use @Inject(forwardRef(() => X))');
  }
  const token = dep.token as InjectionToken;
  let lastError: unknown;
  for (const [ref, strict] of [
    [host, true],
    [global, false],
  ] as const) {
    if (!ref) continue;
    try {
      return await ref.resolve(token, undefined, { strict });
    } catch (err) {
      lastError = err;
    }
  }
  if (dep.optional) return undefined;
  throw new WorkflowDependencyError(className, dep.label, (lastError as Error)?.message ?? 'not found', { cause: lastError });
}

/**
 * Resolves a workflow class's dependencies once, at start-up, and returns the synchronous
 * factory the engine calls for every execution and replay: a fresh instance each time.
 */
export async function createWorkflowFactory(wrapper: InstanceWrapper, global: ModuleRef): Promise<WorkflowFactory> {
  const metatype = wrapper.metatype as Type<WorkflowInstance>;
  const className = metatype.name;
  const host = wrapper.host?.getProviderByKey(ModuleRef)?.instance as ModuleRef | undefined;
  const args: unknown[] = [];
  for (const dep of constructorDependencies(metatype)) args.push(await resolveDependency(className, dep, host, global));
  const props: Array<[string | symbol, unknown]> = [];
  for (const dep of propertyDependencies(metatype)) props.push([dep.key, await resolveDependency(className, dep, host, global)]);
  return () => {
    const instance = new metatype(...args) as WorkflowInstance & Record<string | symbol, unknown>;
    for (const [key, value] of props) instance[key] = value;
    return instance;
  };
}
